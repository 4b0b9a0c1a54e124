"""The GRPO loop over real processes: sample through the server's HTTP API (all of a step's
requests at once, so the server batches them), build the batch file the way the swarm
server does (prompt + completion ids, loss mask on the completion, sampling log-probs and
temperature), train one step, load the adapter, serve with it."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from .processes import ServerProcess, TrainerProcess, http_json
from .tasks import Task


def rollout(server_url: str, model: str, task: Task, max_tokens: int, seed: int | None, temperature: float = 1.0) -> dict:
    body = {"model": model, "messages": task.messages, "max_tokens": max_tokens, "temperature": temperature,
            "logprobs": True, "return_token_ids": True, "return_tokens_as_token_ids": True}
    if seed is not None:
        body["seed"] = seed
    status, answer = http_json("POST", f"{server_url}/v1/chat/completions", body)
    if status != 200:
        raise RuntimeError(f"chat completion failed ({status}): {answer}")
    choice = answer["choices"][0]
    prompt, completion = answer["prompt_token_ids"], choice["token_ids"]
    logprobs = [entry["logprob"] for entry in choice["logprobs"]["content"]]
    reward = task.score(choice["message"]["content"], completion)
    return {"taskId": task.task_id, "episodeUuid": uuid.uuid4().hex, "tokenIds": prompt + completion,
            "lossMask": [0] * len(prompt) + [1] * len(completion), "logprobs": [None] * len(prompt) + logprobs,
            "reward": reward, "temperature": temperature}


def run_grpo(server: ServerProcess, trainer: TrainerProcess, work_dir: str | Path, *, steps: int,
             make_tasks: Callable[[int], list[Task]], repeats: int, max_tokens: int, base_model: str = "policy",
             temperature: float = 1.0, log: Callable[[str], None] = print) -> list[dict]:
    work = Path(work_dir)
    (work / "batches").mkdir(parents=True, exist_ok=True)
    model, history = base_model, []
    pool = ThreadPoolExecutor(max_workers=64)
    for step in range(1, steps + 1):
        started = time.perf_counter()
        jobs = [task for task in make_tasks(step) for _ in range(repeats)]
        samples = list(pool.map(lambda task: rollout(server.url, model, task, max_tokens, None, temperature), jobs))
        rollout_seconds = time.perf_counter() - started
        generated = sum(sum(s["lossMask"]) for s in samples)
        batch_file = work / "batches" / f"step-{step}.jsonl"
        batch_file.write_text("".join(json.dumps(sample) + "\n" for sample in samples))
        result = trainer.call("train", batch_file=str(batch_file), step=step, output_dir=str(work / "adapters" / f"step-{step}"))
        name = f"a3r-step-{step}"
        status, answer = http_json("POST", f"{server.url}/v1/load_lora_adapter", {"lora_name": name, "lora_path": result["adapter_path"]})
        if status != 200:
            raise RuntimeError(f"load_lora_adapter failed ({status}): {answer}")
        if model != base_model:
            status, answer = http_json("POST", f"{server.url}/v1/unload_lora_adapter", {"lora_name": model})
            if status != 200:
                raise RuntimeError(f"unload_lora_adapter {model} failed ({status}): {answer}")
        model = name
        reward = sum(s["reward"] for s in samples) / len(samples)
        record = {"step": step, "reward_mean": reward, "rollout_seconds": rollout_seconds,
                  "rollout_tokens_per_s": generated / max(rollout_seconds, 1e-9),
                  "step_seconds": time.perf_counter() - started, **{f"train_{k}": v for k, v in result["metrics"].items()}}
        history.append(record)
        log(f"step {step}: reward {reward:.3f}  rollout {rollout_seconds:.1f}s  train {result['metrics']['step_seconds']:.2f}s "
            f"({result['metrics']['tokens_per_s']:.0f} tok/s, peak {result['metrics']['peak_memory_mb']:.0f} MB, "
            f"grad norm {result['metrics']['grad_norm']:.3g})")
    pool.shutdown()
    return history


def throughput_probe(trainer: TrainerProcess, work_dir: str | Path, *, vocab_size: int, rows: int, length: int,
                     step: int) -> dict:
    """One train step on a synthetic batch of long sequences (random ids, the second half
    loss-masked, no behaviour log-probs): tokens/s and peak memory at a realistic size."""
    import random

    rng = random.Random(0)
    lines = []
    for row in range(rows):
        ids = [rng.randrange(vocab_size) for _ in range(length)]
        half = length // 2
        lines.append({"taskId": f"probe-{row % max(1, rows // 4)}", "episodeUuid": f"probe-{row}", "tokenIds": ids,
                      "lossMask": [0] * half + [1] * (length - half), "reward": float(rng.random())})
    path = Path(work_dir) / "batches" / "throughput-probe.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return trainer.call("train", batch_file=str(path), step=step, output_dir=str(Path(work_dir) / "adapters" / "probe"))["metrics"]
