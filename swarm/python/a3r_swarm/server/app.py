"""The reference server's HTTP layer: routes, JSON in/out, OpenAI-style errors.

ThreadingHTTPServer: each request waits in its own thread while the batcher (batcher.py)
generates for all of them together; /health and /v1/models answer meanwhile. One lock
around the model: a batched step and an adapter change never overlap."""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from ..errors import A3RError, BadRequest
from ..models import Policy
from .batcher import Batcher, new_generator
from .generation import Sequence
from .requests import parse_chat_request

UNLOAD_WAIT_SECONDS = 300

MAX_BODY_BYTES = 64 * 2**20


class HttpError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.kind = status, message, param, kind


class ServerState:
    def __init__(self, policy: Policy, served_name: str, seed: int, max_model_len: int,
                 logprobs_mode: str = "processed_logprobs", max_batch: int = 64):
        self.policy = policy
        self.served_name = served_name
        self.max_model_len = max_model_len
        self.logprobs_mode = logprobs_mode
        self.lock = threading.Lock()
        self.generator = torch.Generator().manual_seed(seed)  # requests without a seed draw from here
        self.adapters: dict[str, str] = {}
        self.unloading: set[str] = set()  # new requests for these get 404 while in-flight ones finish
        self.created = int(time.time())
        self.batcher = Batcher(policy, self.lock, max_batch)

    def models(self) -> dict:
        base = {"id": self.served_name, "object": "model", "created": self.created, "owned_by": "a3r",
                "root": self.policy.model_path, "parent": None, "max_model_len": self.max_model_len}
        loras = [{"id": name, "object": "model", "created": self.created, "owned_by": "a3r", "root": path,
                  "parent": self.served_name} for name, path in self.adapters.items()]
        return {"object": "list", "data": [base, *loras]}

    def chat(self, body) -> dict:
        request = parse_chat_request(body)
        name = request.model or self.served_name
        if name != self.served_name and (name not in self.adapters or name in self.unloading):
            raise HttpError(404, f"The model `{name}` does not exist.", "model", "NotFoundError")
        prompt = self.policy.encode_chat(request.messages, add_generation_prompt=True)
        if len(prompt) >= self.max_model_len:
            raise BadRequest(f"messages: the prompt has {len(prompt)} tokens; max-model-len is {self.max_model_len}")
        sequence = Sequence(prompt, request.params, new_generator(request.seed, self.generator), self.max_model_len,
                            self.logprobs_mode)
        completion = self.batcher.run(None if name == self.served_name else name, sequence)
        logprobs = None
        if request.want_logprobs:
            logprobs = {"content": [{"token": f"token_id:{token}", "logprob": value, "bytes": None, "top_logprobs": []}
                                    for token, value in zip(completion.token_ids, completion.logprobs)]}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()), "model": name,
            # Token ids only when asked for, as vLLM (>= 0.10.2) does with return_token_ids.
            "prompt_token_ids": prompt if request.want_token_ids else None,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text},
                         "finish_reason": completion.finish_reason,
                         "token_ids": completion.token_ids if request.want_token_ids else None,
                         "logprobs": logprobs}],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(completion.token_ids),
                      "total_tokens": len(prompt) + len(completion.token_ids)},
        }

    def load_lora(self, body) -> dict:
        if not isinstance(body, dict):
            raise BadRequest("body: expected a JSON object")
        name, path = body.get("lora_name"), body.get("lora_path")
        if not isinstance(name, str) or not name:
            raise BadRequest("lora_name: expected a non-empty string")
        if not isinstance(path, str) or not path:
            raise BadRequest("lora_path: expected a non-empty string")
        with self.lock:
            if name in self.adapters or name == self.served_name:
                raise BadRequest(f"lora_name: the adapter {name!r} is already loaded")
            self.policy.load_adapter(name, path)  # raises AdapterInvalid (400) naming the path
            self.adapters[name] = path
        return {"ok": True, "lora_name": name, "lora_path": path}

    def unload_lora(self, body) -> dict:
        if not isinstance(body, dict) or not isinstance(body.get("lora_name"), str):
            raise BadRequest("lora_name: expected a non-empty string")
        name = body["lora_name"]
        with self.lock:
            if name not in self.adapters or name in self.unloading:
                raise HttpError(404, f"The lora adapter `{name}` is not loaded.", "lora_name", "NotFoundError")
            self.unloading.add(name)
        try:
            # Requests already running on it finish first (vLLM keeps serving them too).
            self.batcher.wait_unused(name, UNLOAD_WAIT_SECONDS)
            with self.lock:
                self.policy.unload_adapter(name)
                del self.adapters[name]
        finally:
            self.unloading.discard(name)
        return {"ok": True, "lora_name": name}


def make_handler(state: ServerState):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass  # one line per request would drown the trainer's logs

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True  # the unread body would corrupt a kept-alive stream
                raise HttpError(413, f"body: larger than {MAX_BODY_BYTES} bytes")
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw or b"null")
            except ValueError as error:
                raise HttpError(400, f"body: not valid JSON ({error})") from error

        def _run(self, action) -> None:
            try:
                self._send(200, action())
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up waiting (its timeout): nothing to answer
            except HttpError as error:
                self._send(error.status, _error_body(error.message, error.kind, error.param, error.status))
            except A3RError as error:
                self._send(400, _error_body(error.message, "invalid_request_error", _param_of(error.message), 400))
            except Exception as error:  # never crash the server on one request
                traceback.print_exc(file=sys.stderr)
                self._send(500, _error_body(f"{type(error).__name__}: {error}", "internal_error", None, 500))

        def do_GET(self):  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/health":
                self._run(lambda: {})
            elif path == "/v1/models":
                self._run(state.models)
            else:
                self._run(lambda: _not_found(path))

        def do_POST(self):  # noqa: N802
            path = self.path.split("?", 1)[0]
            routes = {"/v1/chat/completions": state.chat, "/v1/load_lora_adapter": state.load_lora,
                      "/v1/unload_lora_adapter": state.unload_lora}
            route = routes.get(path)
            if route is None:
                self._run(lambda: _not_found(path))
            else:
                self._run(lambda: route(self._body()))

    return Handler


def _not_found(path: str):
    raise HttpError(404, f"no route {path}", None, "NotFoundError")


def _param_of(message: str) -> str | None:
    head = message.split(":", 1)[0]
    return head if head and " " not in head else None


def _error_body(message: str, kind: str, param: str | None, status: int) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": status}, "object": "error",
            "message": message}


class ReferenceHTTPServer(ThreadingHTTPServer):
    # The standard library's listen backlog of 5 resets connections when a swarm opens
    # dozens at once; they are meant to wait for the batcher instead.
    request_queue_size = 1024


def bind_server(host: str, port: int) -> ThreadingHTTPServer:
    """Bind before the model loads so a taken port fails at once; the handler is set later."""
    server = ReferenceHTTPServer((host, port), BaseHTTPRequestHandler, bind_and_activate=True)
    server.daemon_threads = True
    return server
