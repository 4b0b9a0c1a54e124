"""python3 -m a3r_swarm.tiny init --out DIR [--seed 0] [--d-model 64] [--layers 2] [--heads 4] [--words a,b,c]"""

from __future__ import annotations

import argparse
import sys

from .store import init_model_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m a3r_swarm.tiny")
    commands = parser.add_subparsers(dest="command", required=True)
    init = commands.add_parser("init", help="write a random tiny model directory")
    init.add_argument("--out", required=True)
    init.add_argument("--seed", type=int, default=0)
    init.add_argument("--d-model", type=int, default=64)
    init.add_argument("--layers", type=int, default=2)
    init.add_argument("--heads", type=int, default=4)
    init.add_argument("--unknown-buckets", type=int, default=1024)
    init.add_argument("--max-context", type=int, default=256)
    init.add_argument("--words", help="comma-separated vocabulary (default: the embedded engine's 32 words)")
    args = parser.parse_args(argv)
    words = [word.strip() for word in args.words.split(",") if word.strip()] if args.words else None
    try:
        out = init_model_dir(args.out, seed=args.seed, d_model=args.d_model, layers=args.layers, heads=args.heads,
                             words=words, unknown_buckets=args.unknown_buckets, max_context=args.max_context)
    except ValueError as error:
        print(f"a3r tiny init: {error}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
