"""python3 -m a3r_swarm.server --model PATH --port P [--host 127.0.0.1] [--served-model-name NAME]
   [--device auto] [--seed 0] [--enable-lora] [--max-lora-rank R] [--max-model-len N]

vLLM-style flags so one command template fits both servers; --enable-lora and
--max-lora-rank are accepted and ignored (adapters can always be loaded here), as are other
unknown flags, with a warning. A start failure prints one line to stderr and exits 1."""

from __future__ import annotations

import argparse
import errno
import signal
import sys
from pathlib import Path


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(prog="python3 -m a3r_swarm.server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--enable-lora", action="store_true")
    parser.add_argument("--max-lora-rank", type=int, default=None)
    parser.add_argument("--max-model-len", type=int, default=None)
    return parser.parse_known_args(argv)


def fail(message: str) -> int:
    print(message, file=sys.stderr, flush=True)
    return 1


def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt  # serve_forever unwinds and the socket is closed


def main(argv: list[str] | None = None) -> int:
    args, unknown = parse_args(argv)
    if unknown:
        print(f"a3r reference server: ignoring unsupported arguments {' '.join(unknown)}", file=sys.stderr)
    from ..errors import A3RError, MissingDependency
    from ..tiny.store import is_tiny_model_dir

    from ..models import looks_like_hub_id

    if not is_tiny_model_dir(args.model) and not Path(args.model).exists() and not looks_like_hub_id(args.model):
        return fail(f"model not found: {args.model}")
    from .app import ServerState, bind_server, make_handler

    try:
        server = bind_server(args.host, args.port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            return fail(f"address already in use: {args.host}:{args.port}")
        return fail(f"cannot listen on {args.host}:{args.port}: {error}")
    try:
        from ..models import load_policy

        policy = load_policy(args.model, args.device)
    except MissingDependency as error:
        return fail(error.message)
    except A3RError as error:
        return fail(error.message)
    max_len = args.max_model_len or policy.max_context
    if policy.kind == "tiny" and max_len > policy.max_context:
        return fail(f"--max-model-len {max_len} exceeds the tiny model's max context of {policy.max_context}")
    name = args.served_model_name or args.model
    server.RequestHandlerClass = make_handler(ServerState(policy, name, args.seed, max_len))
    host, port = server.server_address[:2]
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    from ..parent_watch import watch_parent

    watch_parent()
    print(f"a3r reference server ready on http://{host}:{port} (model {name})", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
