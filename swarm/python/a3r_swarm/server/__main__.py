"""python3 -m a3r_swarm.server --model PATH --port P [--host 127.0.0.1] [--served-model-name NAME]
   [--device auto] [--seed 0] [--enable-lora] [--max-lora-rank R] [--max-loras N] [--max-model-len N]
   [--max-num-seqs 64] [--logprobs-mode processed_logprobs|raw_logprobs] [--generation-config vllm]

vLLM-style flags so one command template fits both servers; --enable-lora, --max-lora-rank
and --max-loras are accepted and ignored (adapters can always be loaded here), as are other
unknown flags, with a warning. --generation-config accepts only `vllm`: this server never
takes sampling defaults from the model's generation_config.json. A start failure prints one
line to stderr and exits 1."""

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
    parser.add_argument("--max-loras", type=int, default=None)
    parser.add_argument("--max-model-len", type=int, default=None)
    parser.add_argument("--max-num-seqs", type=int, default=64)
    parser.add_argument("--logprobs-mode", default="processed_logprobs")
    parser.add_argument("--generation-config", default="vllm")
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
    from .generation import LOGPROBS_MODES

    if args.logprobs_mode not in LOGPROBS_MODES:
        return fail(f"--logprobs-mode: expected one of {', '.join(LOGPROBS_MODES)}, got {args.logprobs_mode!r}")
    if args.generation_config != "vllm":
        return fail(f"--generation-config: only `vllm` is supported (this server never applies the model's "
                    f"generation_config.json sampling defaults), got {args.generation_config!r}")
    if args.max_num_seqs < 1:
        return fail(f"--max-num-seqs: must be at least 1, got {args.max_num_seqs}")
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
    server.RequestHandlerClass = make_handler(ServerState(policy, name, args.seed, max_len, args.logprobs_mode,
                                                         args.max_num_seqs))
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
