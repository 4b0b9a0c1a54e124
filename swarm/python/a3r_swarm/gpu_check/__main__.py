"""python3 -m a3r_swarm.gpu_check build-qwen --out DIR [--hidden 64 --layers 2 ...]  (= python -m a3r_swarm.gpu_check.qwen_model)
python3 -m a3r_swarm.gpu_check run --model DIR [--task target-words|item-colour] [--device cuda] [--steps 20]
    [--tasks-per-step 8] [--repeats 8] [--max-tokens 16] [--lr 2e-3] [--rank 16] [--alpha 32]
    [--probe-rows 0 --probe-length 1024] [--json OUT.json] [--work DIR]"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from .driver import run_grpo, throughput_probe
from .processes import ServerProcess, TrainerProcess
from .tasks import item_colour_tasks, target_word_tasks


def log(message: str) -> None:
    print(f"[gpu-check] {message}", file=sys.stderr, flush=True)


def run(args) -> dict:
    work = Path(args.work or tempfile.mkdtemp(prefix="a3r-gpu-check-"))
    rng = random.Random(args.seed)
    if args.task == "item-colour":
        make_tasks = lambda step: item_colour_tasks(rng, args.tasks_per_step)  # noqa: E731
    else:
        from .qwen_model import target_words, word_vocabulary

        config = json.loads((Path(args.model) / "config.json").read_text())
        words = word_vocabulary(int(config["vocab_size"]))
        targets = target_words(words)
        make_tasks = lambda step: target_word_tasks(rng, args.tasks_per_step, words, targets)  # noqa: E731
    started = time.perf_counter()
    server = ServerProcess(args.model, device=args.device, echo_stderr=True)
    trainer = TrainerProcess(echo_stderr=True)
    try:
        loaded = trainer.call("load", model=args.model, device=args.device, seed=args.seed,
                              lora={"rank": args.rank, "alpha": args.alpha, "target_modules": args.targets},
                              optimizer={"lr": args.lr, "kl_coef": args.kl_coef}, micro_batch_tokens=args.micro_batch_tokens,
                              gradient_checkpointing=args.gradient_checkpointing)
        log(f"loaded: {loaded}")
        history = run_grpo(server, trainer, work, steps=args.steps, make_tasks=make_tasks, repeats=args.repeats,
                           max_tokens=args.max_tokens, log=log)
        probe = None
        if args.probe_rows > 0:
            probe = throughput_probe(trainer, work, vocab_size=loaded["vocab_size"], rows=args.probe_rows,
                                     length=args.probe_length, step=args.steps + 1)
            log(f"throughput probe ({args.probe_rows} x {args.probe_length} tokens): {probe['tokens_per_s']:.0f} tok/s, "
                f"{probe['step_seconds']:.2f}s, peak {probe['peak_memory_mb']:.0f} MB")
    finally:
        trainer.close()
        server.close()
    curve = [round(record["reward_mean"], 4) for record in history]
    last = curve[-min(5, len(curve)):]
    return {
        "model": args.model, "task": args.task, "device": loaded["device"], "load": loaded, "steps": args.steps,
        "episodes_per_step": args.tasks_per_step * args.repeats, "reward_curve": curve,
        "reward_first": curve[0] if curve else None, "reward_last5_mean": sum(last) / len(last) if last else None,
        "train_tokens_per_s_mean": sum(r["train_tokens_per_s"] for r in history) / len(history),
        "train_step_seconds_mean": sum(r["train_step_seconds"] for r in history) / len(history),
        "rollout_tokens_per_s_mean": sum(r["rollout_tokens_per_s"] for r in history) / len(history),
        "peak_memory_mb": max(r["train_peak_memory_mb"] for r in history), "probe": probe,
        "wall_seconds": time.perf_counter() - started, "history": history,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m a3r_swarm.gpu_check")
    commands = parser.add_subparsers(dest="command", required=True)
    # build-qwen: the same flags as `python -m a3r_swarm.gpu_check.qwen_model` (its help lists them).
    commands.add_parser("build-qwen", add_help=False)
    go = commands.add_parser("run")
    go.add_argument("--model", required=True)
    go.add_argument("--task", choices=["target-words", "item-colour"], default="target-words")
    go.add_argument("--device", default="auto")
    go.add_argument("--steps", type=int, default=20)
    go.add_argument("--tasks-per-step", type=int, default=8)
    go.add_argument("--repeats", type=int, default=8)
    go.add_argument("--max-tokens", type=int, default=16)
    go.add_argument("--lr", type=float, default=2e-3)
    go.add_argument("--rank", type=int, default=16)
    go.add_argument("--alpha", type=float, default=32.0)
    go.add_argument("--targets", type=lambda text: [t for t in text.split(",") if t], default=None)
    go.add_argument("--kl-coef", type=float, default=0.0)
    go.add_argument("--micro-batch-tokens", type=int, default=8192)
    go.add_argument("--gradient-checkpointing", action="store_true")
    go.add_argument("--probe-rows", type=int, default=0)
    go.add_argument("--probe-length", type=int, default=1024)
    go.add_argument("--seed", type=int, default=0)
    go.add_argument("--work")
    go.add_argument("--json")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build-qwen"]:
        from .qwen_model import main as build_main

        return build_main(argv[1:])
    args = parser.parse_args(argv)
    summary = run(args)
    text = json.dumps(summary, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
