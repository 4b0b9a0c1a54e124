"""The a3r-trainer/1 request loop: one JSON request per stdin line, one JSON answer per
stdout line, in order. Nothing else may reach stdout, so the real stdout is kept for the
protocol and file descriptor 1 is pointed at stderr (catching prints from libraries and C
code too)."""

from __future__ import annotations

import json
import math
import os
import sys
import traceback
from typing import IO, Any, Callable

from .. import TRAINER_PROTOCOL
from ..errors import A3RError, BadRequest, is_out_of_memory
from .session import TrainerSession, log


def _finite(value: Any) -> Any:
    # JSON has no NaN/Infinity; a non-finite metric must never make an unparseable line.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def error_answer(request_id: Any, code: str, message: str, retryable: bool = False) -> dict:
    return {"id": request_id, "ok": False, "error": {"code": code, "message": message, "retryable": retryable}}


def handle_line(session: TrainerSession, line: str) -> tuple[dict, bool]:
    """Answer one request line; the bool says whether to exit afterwards."""
    try:
        request = json.loads(line)
    except ValueError as error:
        return error_answer(None, "BAD_REQUEST", f"request line is not valid JSON: {error}"), False
    if not isinstance(request, dict):
        return error_answer(None, "BAD_REQUEST", "request must be a JSON object"), False
    request_id = request.get("id")
    op = request.get("op")
    operations: dict[str, Callable[[dict], dict]] = {
        "load": session.load, "train": session.train, "save": session.save, "restore": session.restore,
    }
    try:
        if op == "shutdown":
            return {"id": request_id, "ok": True, "result": {"ok": True}}, True
        if not isinstance(op, str) or op not in operations:
            raise BadRequest(f"op: unknown op {op!r} (expected load, train, save, restore or shutdown)")
        return {"id": request_id, "ok": True, "result": operations[op](request)}, False
    except A3RError as error:
        return error_answer(request_id, error.code, error.message, error.retryable), False
    except Exception as error:  # never let one request kill the process
        if is_out_of_memory(error):
            return error_answer(request_id, "OUT_OF_MEMORY", f"{error}; retry with a smaller micro_batch_tokens", True), False
        traceback.print_exc(file=sys.stderr)
        return error_answer(request_id, "INTERNAL", f"{type(error).__name__}: {error}"), False


def serve(stdin: IO[str], out: IO[str]) -> int:
    session = TrainerSession()

    def send(answer: dict) -> None:
        out.write(json.dumps(_finite(answer), allow_nan=False) + "\n")
        out.flush()

    send({"event": "ready", "protocol": TRAINER_PROTOCOL, "pid": os.getpid()})
    for line in stdin:
        if not line.strip():
            continue
        answer, stop = handle_line(session, line)
        send(answer)
        if stop:
            break
    log("exiting")
    return 0


def main() -> int:
    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # one rank of a torchrun group (trainer.nprocs > 1)
        from .distributed import serve_distributed

        return serve_distributed(sys.stdin, protocol_out)
    return serve(sys.stdin, protocol_out)
