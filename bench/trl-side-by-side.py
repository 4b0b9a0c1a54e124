"""a3r's trainer measured on CPU with the random tiny Qwen2 and Qwen's real tokenizer.

    python bench/trl-side-by-side.py logits [--steps 5] [--json OUT]   # step time: trained positions vs all
    python bench/trl-side-by-side.py trl [--steps 12] [--json OUT]     # a3r against TRL's GRPOTrainer

`logits`: the same batch (8 prompts x group 4, 16-token completions, LoRA rank 8 on every
projection + lm_head) trained with logits for the trained positions only (the trainer's
path) and with logits for every position (the path before), each in its own process so the
peak memory is its own; also the disk an adapter takes with and without PEFT's frozen
embeddings, and what `keep_adapters` leaves after the steps.

`trl`: the same model, tokenizer, task (say word tokens; reward = their share), group
size, batch, lr, LoRA rank/targets, completion length and number of steps through a3r (the
reference server generating, the persistent trainer training, over HTTP: the gpu check's
loop) and through TRL's GRPOTrainer (generation with transformers in the same process).
Prints trained tokens per second of the train step for each, their ratio, wall time per
step and both reward curves. Run by bench/trl-side-by-side.bench.ts (`npm run bench`).
Needs the .venv (torch, transformers, peft, trl, datasets)."""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "swarm" / "python"))

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]
PROMPTS, GROUP, COMPLETION, RANK, ALPHA, LR = 8, 4, 16, 8, 16, 0.05


def build_model(directory: Path) -> str:
    from a3r_swarm.gpu_check.qwen_model import build_random_qwen2

    return str(build_random_qwen2(directory / "model", hidden=64, layers=2, seed=0))


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def synthetic_batch(model: str, path: Path) -> Path:
    """8 prompts x 4 completions of 16 random word tokens, rewards 0/1 within each group."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    rng = random.Random(0)
    words = [i for i in range(len(tokenizer)) if tokenizer.decode([i]).strip().isalpha()]
    lines = []
    for group in range(PROMPTS):
        messages = [{"role": "user", "content": f"Write some words like {' '.join(rng.sample(['river', 'stone', 'cloud', 'music', 'garden'], 3))}."}]
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
        for repeat in range(GROUP):
            completion = [rng.choice(words) for _ in range(COMPLETION)]
            lines.append({"taskId": f"g{group}", "episodeUuid": f"g{group}-{repeat}", "tokenIds": prompt + completion,
                          "lossMask": [0] * len(prompt) + [1] * COMPLETION, "reward": float(repeat % 2)})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def logits_worker(model: str, batch: str, full: bool, steps: int, out: str) -> None:
    """One process: `steps` train steps of the batch; the step time and this process's peak RSS."""
    import torch

    from a3r_swarm.trainer import TrainerSession
    from a3r_swarm.trainer import grpo

    if full:  # the path before: logits for every position, selected afterwards
        original = grpo.trained_log_probs
        grpo.trained_log_probs = lambda policy, batch, full_logits=False: original(policy, batch, full_logits=True)
    torch.manual_seed(0)
    session = TrainerSession()
    session.load({"model": model, "device": "cpu", "seed": 0, "micro_batch_tokens": 8192,
                  "lora": {"rank": RANK, "alpha": ALPHA, "target_modules": TARGETS}, "optimizer": {"lr": LR}})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds, cpu, work = [], [], Path(out).parent / ("full" if full else "selected")
    for step in range(1, steps + 1):
        started = time.perf_counter()
        result = session.train({"batch_file": batch, "step": step, "output_dir": str(work / f"step-{step}")})
        seconds.append(time.perf_counter() - started)
        cpu.append(result["metrics"]["cpu_seconds"])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kept = sorted(p.name for p in work.iterdir())
    with_embeddings = work / "with-embeddings"
    session.policy.model.save_pretrained(str(with_embeddings), save_embedding_layers="auto")
    Path(out).write_text(json.dumps({
        "step_seconds": seconds, "cpu_seconds": cpu, "trained_tokens": result["metrics"]["trained_tokens"], "peak_rss_mb": peak,
        "rss_before_steps_mb": before, "adapter_mb": folder_mb(work / f"step-{steps}"),
        "adapter_with_embeddings_mb": folder_mb(with_embeddings), "kept_adapters": kept,
        "adapters_disk_mb": sum(folder_mb(work / name) for name in kept if name.startswith("step-"))}))


def measure_logits(steps: int) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="a3r-bench-logits-"))
    try:
        model = build_model(directory)
        batch = str(synthetic_batch(model, directory / "batch.jsonl"))
        results = {}
        for full in (False, True):
            out = directory / f"result-{full}.json"
            subprocess.run([sys.executable, __file__, "logits-worker", model, batch, "1" if full else "0", str(steps), str(out)],
                           check=True, stdout=subprocess.DEVNULL)
            result = json.loads(out.read_text())
            # The first step also warms up (allocations, lazy inits): the others are compared.
            later = result["cpu_seconds"][1:] or result["cpu_seconds"]
            result["cpu_seconds_mean"] = sum(later) / len(later)
            results["full" if full else "selected"] = result
        # CPU seconds, not wall time: on a shared machine the wall clock mostly measures the others.
        results["speedup"] = results["full"]["cpu_seconds_mean"] / results["selected"]["cpu_seconds_mean"]
        results["steps"] = steps
        return results
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# ---- a3r against TRL ------------------------------------------------------------------------

def word_reward_ids(tokenizer):
    from a3r_swarm.gpu_check.tasks import WORD_TOKEN

    stops = {tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")}
    cache: dict[int, bool] = {}

    def score(ids: list[int]) -> float:
        body = [token for token in ids if token not in stops]
        for token in body:
            if token not in cache:
                cache[token] = WORD_TOKEN.fullmatch(tokenizer.decode([token])) is not None
        return sum(cache[token] for token in body) / len(body) if body else 0.0

    return score


def run_a3r(model: str, steps: int, work: Path) -> dict:
    from a3r_swarm.gpu_check.driver import run_grpo
    from a3r_swarm.gpu_check.processes import ServerProcess, TrainerProcess
    from a3r_swarm.gpu_check.tasks import word_token_tasks
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    stops = frozenset({tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")})
    rng = random.Random(0)
    server = ServerProcess(model, device="cpu")
    trainer = TrainerProcess()
    try:
        trainer.call("load", model=model, device="cpu", seed=0, lora={"rank": RANK, "alpha": ALPHA, "target_modules": TARGETS},
                     optimizer={"lr": LR}, micro_batch_tokens=8192)
        started = time.perf_counter()
        history = run_grpo(server, trainer, work, steps=steps, repeats=GROUP, max_tokens=COMPLETION,
                           make_tasks=lambda step: word_token_tasks(rng, PROMPTS, lambda t: tokenizer.decode([t]), stops),
                           log=lambda message: print(f"[a3r] {message}", file=sys.stderr, flush=True))
        wall = time.perf_counter() - started
    finally:
        trainer.close()
        server.close()
    return {"reward_curve": [round(r["reward_mean"], 4) for r in history],
            "train_seconds": [r["train_step_seconds"] for r in history],
            "train_cpu_seconds": [r["train_cpu_seconds"] for r in history],
            "trained_tokens": [r["train_trained_tokens"] for r in history], "wall_seconds": wall}


def run_trl(model: str, steps: int, work: Path) -> dict:
    import datasets
    import peft
    import transformers
    from trl import GRPOConfig, GRPOTrainer
    from a3r_swarm.gpu_check.tasks import CUES

    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    score = word_reward_ids(tokenizer)
    rng = random.Random(0)
    rows = [{"prompt": [{"role": "user", "content": f"Write some words like {' '.join(rng.sample(CUES, 3))}."}]}
            for _ in range(PROMPTS * steps)]

    def reward(completions, completion_ids=None, **_):
        return [score(list(ids)) for ids in completion_ids]

    timing = {"generate": [], "train": [], "trained_tokens": [], "generate_cpu": [], "train_cpu": []}

    class Timed(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            started, cpu = time.perf_counter(), time.process_time()
            output = super()._generate_and_score_completions(inputs)
            timing["generate"].append(time.perf_counter() - started)
            timing["generate_cpu"].append(time.process_time() - cpu)
            timing["trained_tokens"].append(int(output["completion_mask"].sum()))
            return output

        def training_step(self, *args, **kwargs):
            started, cpu = time.perf_counter(), time.process_time()
            generated = len(timing["generate"])
            loss = super().training_step(*args, **kwargs)
            spent, spent_cpu = time.perf_counter() - started, time.process_time() - cpu
            fresh = len(timing["generate"]) > generated
            timing["train"].append(spent - (timing["generate"][-1] if fresh else 0.0))
            timing["train_cpu"].append(spent_cpu - (timing["generate_cpu"][-1] if fresh else 0.0))
            return loss

    config = GRPOConfig(output_dir=str(work / "trl"), per_device_train_batch_size=PROMPTS * GROUP, num_generations=GROUP,
                        max_completion_length=COMPLETION, learning_rate=LR, max_steps=steps, temperature=1.0, top_p=1.0,
                        top_k=0, repetition_penalty=1.0, beta=0.0, epsilon=0.2, loss_type="dapo", scale_rewards="group",
                        logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, bf16=False, shuffle_dataset=False,
                        gradient_accumulation_steps=1, num_iterations=1, lr_scheduler_type="constant", warmup_steps=0,
                        weight_decay=0.0, max_grad_norm=1.0, seed=0, disable_dropout=True)
    lora = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS, task_type="CAUSAL_LM")
    policy = transformers.AutoModelForCausalLM.from_pretrained(model, dtype="float32")
    trainer = Timed(model=policy, reward_funcs=reward, args=config, train_dataset=datasets.Dataset.from_list(rows),
                    processing_class=tokenizer, peft_config=lora)
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    curve = [round(entry["reward"], 4) for entry in trainer.state.log_history if "reward" in entry]
    return {"reward_curve": curve, "train_seconds": timing["train"], "train_cpu_seconds": timing["train_cpu"],
            "trained_tokens": timing["trained_tokens"], "generate_seconds": timing["generate"],
            "generate_cpu_seconds": timing["generate_cpu"], "wall_seconds": wall}


def least_disturbed_rate(result: dict, key: str = "train_seconds") -> float:
    """Trained tokens per second over the faster half of the steps (the machine is shared)."""
    rates = sorted((tokens / seconds for tokens, seconds in zip(result["trained_tokens"], result[key]) if seconds > 0),
                   reverse=True)
    best = rates[: max(1, len(rates) // 2)]
    return sum(best) / len(best)


def measure_trl(steps: int) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="a3r-bench-trl-"))
    try:
        model = build_model(directory)
        a3r = run_a3r(model, steps, directory / "a3r")
        trl = run_trl(model, steps, directory / "trl")
        for result in (a3r, trl):
            result["trained_tokens_per_s"] = least_disturbed_rate(result)
            result["trained_tokens_per_cpu_s"] = least_disturbed_rate(result, "train_cpu_seconds")
            result["wall_seconds_per_step"] = result["wall_seconds"] / steps
        return {"steps": steps, "episodes_per_step": PROMPTS * GROUP, "a3r": a3r, "trl": trl,
                "ratio_trained_tokens_per_s": a3r["trained_tokens_per_s"] / trl["trained_tokens_per_s"],
                "ratio_trained_tokens_per_cpu_s": a3r["trained_tokens_per_cpu_s"] / trl["trained_tokens_per_cpu_s"],
                "ratio_wall_per_step": a3r["wall_seconds_per_step"] / trl["wall_seconds_per_step"]}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "logits-worker":
        logits_worker(sys.argv[2], sys.argv[3], sys.argv[4] == "1", int(sys.argv[5]), sys.argv[6])
        return 0
    parser = argparse.ArgumentParser(prog="bench/trl-side-by-side.py")
    parser.add_argument("mode", choices=["logits", "trl"])
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    result = measure_logits(args.steps or 5) if args.mode == "logits" else measure_trl(args.steps or 12)
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
