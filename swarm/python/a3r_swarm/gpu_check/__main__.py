"""python3 -m a3r_swarm.gpu_check build-qwen --out DIR [--hidden 64 --layers 2 ...]  (= python -m a3r_swarm.gpu_check.qwen_model)
python3 -m a3r_swarm.gpu_check run --model DIR [--task words|item-colour] [--device cuda] [--steps 20]
    [--tasks-per-step 8] [--repeats 8] [--max-tokens 16] [--temperature 1] [--lr 2e-3] [--rank 16] [--alpha 32]
    [--probe-rows 0 --probe-length 1024] [--min-gain 0.05] [--no-learning-check] [--peak-tflops T]
    [--json OUT.json] [--work DIR]

`run` exits 3 when the learning check fails (see learning_check), 0 otherwise."""

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
from .tasks import item_colour_tasks, word_token_tasks

LEARNING_FAILED = 3
# Dense bf16 peak of the GPUs this check is run on, for MFU (--peak-tflops overrides).
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10G": 125.0, "L4": 121.0, "RTX 4090": 165.0}


def log(message: str) -> None:
    print(f"[gpu-check] {message}", file=sys.stderr, flush=True)


def learning_check(curve: list[float], grad_norms: list[float], min_gain: float) -> tuple[bool, str]:
    """Did the policy learn? Fails when the reward never moved and no gradient ever flowed
    (the signature of a broken tokenizer or reward), and when the mean reward of the last
    third of the steps is not at least `min_gain` above that of the first third."""
    if not curve:
        return False, "no steps ran"
    if all(value == curve[0] for value in curve) and all(norm == 0 for norm in grad_norms):
        return False, (f"the reward stayed at {curve[0]:.3f} on all {len(curve)} steps with a zero gradient: nothing "
                       "was learned (is the tokenizer encoding words to nothing, or the reward constant?)")
    third = max(1, len(curve) // 3)
    first, last = sum(curve[:third]) / third, sum(curve[-third:]) / third
    if last < first + min_gain:
        return False, (f"the reward did not improve: first {third} steps' mean {first:.3f}, last {third} steps' mean "
                       f"{last:.3f} (needs +{min_gain}); learning rate, steps or task too small?")
    return True, f"reward {first:.3f} -> {last:.3f} (mean of the first and last {third} steps)"


def train_flops_per_step(loaded: dict, config: dict | None, tokens: float, trained_tokens: float) -> float | None:
    """LoRA training FLOPs: forward 2N plus backward through the frozen weights 2N per
    token (no weight gradients but LoRA's), lm_head only at the trained positions."""
    if not config:
        return None
    hidden, vocab = int(config["hidden_size"]), int(config["vocab_size"])
    body = loaded["parameters"] - vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    return 4.0 * body * tokens + 4.0 * vocab * hidden * trained_tokens


def peak_flops(device_name: str | None, override: float | None) -> float | None:
    if override:
        return override * 1e12
    for key, value in PEAK_TFLOPS.items():
        if device_name and key in device_name:
            return value * 1e12
    return None


def make_task_source(args, rng: random.Random):
    if args.task == "item-colour":
        return lambda step: item_colour_tasks(rng, args.tasks_per_step)
    from ..errors import import_transformers

    transformers, _ = import_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
    stops = frozenset(t for t in (tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id) if isinstance(t, int))
    return lambda step: word_token_tasks(rng, args.tasks_per_step, lambda token: tokenizer.decode([token]), stops)


def summarise(args, loaded: dict, history: list[dict], probe: dict | None, started: float) -> dict:
    curve = [round(record["reward_mean"], 4) for record in history]
    grad_norms = [record["train_grad_norm"] for record in history]
    passed, message = learning_check(curve, grad_norms, args.min_gain)
    config_path = Path(args.model) / "config.json"
    config = json.loads(config_path.read_text()) if args.task != "item-colour" and config_path.is_file() else None
    mean = lambda key: sum(r[key] for r in history) / len(history)  # noqa: E731
    step_seconds = mean("train_step_seconds")
    flops = train_flops_per_step(loaded, config, mean("train_tokens"), mean("train_trained_tokens"))
    peak = peak_flops(loaded.get("device_name"), args.peak_tflops) if loaded["device"].startswith("cuda") else None
    mfu = flops / step_seconds / peak if flops and peak else None
    if probe and config and peak:
        probe_flops = train_flops_per_step(loaded, config, probe["tokens"], probe["trained_tokens"])
        probe["mfu"] = probe_flops / probe["step_seconds"] / peak
    return {
        "model": args.model, "task": args.task, "device": loaded["device"], "load": loaded, "steps": args.steps,
        "episodes_per_step": args.tasks_per_step * args.repeats, "temperature": args.temperature, "lr": args.lr,
        "reward_curve": curve, "reward_first": curve[0] if curve else None,
        "reward_last5_mean": sum(curve[-5:]) / len(curve[-5:]) if curve else None,
        "learning_check": {"passed": passed, "message": message, "min_gain": args.min_gain},
        "train_tokens_per_s_mean": mean("train_tokens_per_s"), "train_step_seconds_mean": step_seconds,
        "rollout_tokens_per_s_mean": mean("rollout_tokens_per_s"), "mfu": mfu,
        "peak_memory_mb": max(r["train_peak_memory_mb"] for r in history), "probe": probe,
        "wall_seconds": time.perf_counter() - started, "history": history,
    }


def run(args) -> dict:
    work = Path(args.work or tempfile.mkdtemp(prefix="a3r-gpu-check-"))
    rng = random.Random(args.seed)
    make_tasks = make_task_source(args, rng)
    started = time.perf_counter()
    server = ServerProcess(args.model, device=args.device, echo_stderr=True)
    trainer = TrainerProcess(echo_stderr=True)
    try:
        loaded = trainer.call("load", model=args.model, device=args.device, seed=args.seed,
                              lora={"rank": args.rank, "alpha": args.alpha, "target_modules": args.targets},
                              optimizer={"lr": args.lr, "kl_coef": args.kl_coef}, micro_batch_tokens=args.micro_batch_tokens,
                              gradient_checkpointing=args.gradient_checkpointing)
        if loaded["device"].startswith("cuda"):
            import torch

            loaded["device_name"] = torch.cuda.get_device_name(0)
        log(f"loaded: {loaded}")
        history = run_grpo(server, trainer, work, steps=args.steps, make_tasks=make_tasks, repeats=args.repeats,
                           max_tokens=args.max_tokens, temperature=args.temperature, log=log)
        probe = None
        if args.probe_rows > 0:
            probe = throughput_probe(trainer, work, vocab_size=loaded["vocab_size"], rows=args.probe_rows,
                                     length=args.probe_length, step=args.steps + 1)
            log(f"throughput probe ({args.probe_rows} x {args.probe_length} tokens): {probe['tokens_per_s']:.0f} tok/s, "
                f"{probe['step_seconds']:.2f}s, peak {probe['peak_memory_mb']:.0f} MB")
    finally:
        trainer.close()
        server.close()
    return summarise(args, loaded, history, probe, started)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m a3r_swarm.gpu_check")
    commands = parser.add_subparsers(dest="command", required=True)
    # build-qwen: the same flags as `python -m a3r_swarm.gpu_check.qwen_model` (its help lists them).
    commands.add_parser("build-qwen", add_help=False)
    go = commands.add_parser("run")
    go.add_argument("--model", required=True)
    go.add_argument("--task", choices=["words", "item-colour"], default="words")
    go.add_argument("--device", default="auto")
    go.add_argument("--steps", type=int, default=20)
    go.add_argument("--tasks-per-step", type=int, default=8)
    go.add_argument("--repeats", type=int, default=8)
    go.add_argument("--max-tokens", type=int, default=16)
    go.add_argument("--temperature", type=float, default=1.0)
    go.add_argument("--lr", type=float, default=2e-3)
    go.add_argument("--rank", type=int, default=16)
    go.add_argument("--alpha", type=float, default=32.0)
    go.add_argument("--targets", type=lambda text: [t for t in text.split(",") if t], default=None)
    go.add_argument("--kl-coef", type=float, default=0.0)
    go.add_argument("--micro-batch-tokens", type=int, default=8192)
    go.add_argument("--gradient-checkpointing", action="store_true")
    go.add_argument("--probe-rows", type=int, default=0)
    go.add_argument("--probe-length", type=int, default=1024)
    go.add_argument("--min-gain", type=float, default=0.05)
    go.add_argument("--no-learning-check", action="store_true")
    go.add_argument("--peak-tflops", type=float, default=None)
    go.add_argument("--seed", type=int, default=0)
    go.add_argument("--work")
    go.add_argument("--json")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["build-qwen"]:
        from .qwen_model import main as build_main

        return build_main(argv[1:])
    args = parser().parse_args(argv)
    summary = run(args)
    text = json.dumps(summary, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "history"}))
    check = summary["learning_check"]
    if args.no_learning_check:
        return 0
    if not check["passed"]:
        log(f"LEARNING CHECK FAILED: {check['message']}")
        return LEARNING_FAILED
    log(f"learning check passed: {check['message']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
