"""Batch files: reading and checking them, GRPO advantages, packing into micro-batches.

A batch file has one training sample per line:
  {"taskId", "episodeUuid", "tokenIds", "lossMask", "logprobs"?, "reward", "temperature"?, "top_p"?}
`temperature` (> 0, default 1) and `top_p` (in (0, 1], default 1) are the sampling settings
the completion was drawn with: the trainer computes log-probs at that temperature (see grpo.py).
Every problem is reported with the file, the 1-based line number and the field, because the
writer (the TypeScript swarm server) is a different program and that is what its author
needs to find the bug.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import torch

from ..errors import BadBatch, TokenOutOfVocab


@dataclass
class Sample:
    line: int
    task_id: str
    episode_uuid: str
    token_ids: list[int]
    loss_mask: list[int]
    behaviour_logprobs: list[float | None]
    reward: float
    temperature: float = 1.0
    top_p: float = 1.0
    advantage: float = 0.0

    @property
    def trained_tokens(self) -> int:
        # Position 0 has no logits before it, so it can never be trained.
        return sum(self.loss_mask[1:])


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_sample(raw: str, where: str, line: int, vocab_size: int, max_context: int,
                 emittable: torch.Tensor | None) -> Sample:
    def bad(message: str) -> BadBatch:
        return BadBatch(f"{where} line {line}: {message}")

    try:
        record = json.loads(raw)
    except ValueError as error:
        raise bad(f"not valid JSON ({error})") from error
    if not isinstance(record, dict):
        raise bad("expected a JSON object")
    for name in ("taskId", "episodeUuid"):
        if not isinstance(record.get(name), str) or not record[name]:
            raise bad(f"{name}: expected a non-empty string")
    token_ids = record.get("tokenIds")
    if not isinstance(token_ids, list) or not token_ids:
        raise bad("tokenIds: expected a non-empty list of integers")
    for index, token in enumerate(token_ids):
        if not isinstance(token, int) or isinstance(token, bool):
            raise bad(f"tokenIds[{index}]: expected an integer, got {json.dumps(token)}")
        if not 0 <= token < vocab_size:
            raise TokenOutOfVocab(f"{where} line {line}: tokenIds[{index}] = {token} is outside the model's vocabulary "
                                  f"(vocab size {vocab_size}); was the batch tokenized with another tokenizer?")
    if len(token_ids) > max_context:
        raise bad(f"tokenIds: {len(token_ids)} tokens exceed the model's max context of {max_context}")
    loss_mask = record.get("lossMask")
    if not isinstance(loss_mask, list) or len(loss_mask) != len(token_ids):
        got = len(loss_mask) if isinstance(loss_mask, list) else json.dumps(loss_mask)
        raise bad(f"lossMask: expected a list of {len(token_ids)} values (one per token), got {got}")
    for index, flag in enumerate(loss_mask):
        if isinstance(flag, bool) or flag not in (0, 1):
            raise bad(f"lossMask[{index}]: expected 0 or 1, got {json.dumps(flag)}")
    logprobs = record.get("logprobs")
    if logprobs is None:
        logprobs = [None] * len(token_ids)
    elif not isinstance(logprobs, list) or len(logprobs) != len(token_ids):
        got = len(logprobs) if isinstance(logprobs, list) else json.dumps(logprobs)
        raise bad(f"logprobs: expected a list of {len(token_ids)} values (one per token), got {got}")
    for index, value in enumerate(logprobs):
        if value is not None and (not _is_number(value) or not math.isfinite(value)):
            raise bad(f"logprobs[{index}]: expected a finite number or null, got {json.dumps(value)}")
    reward = record.get("reward")
    if not _is_number(reward) or not math.isfinite(reward):
        raise bad(f"reward: expected a finite number, got {json.dumps(reward)}")
    temperature = record.get("temperature", 1.0)
    if not _is_number(temperature) or not math.isfinite(temperature) or temperature <= 0:
        # Greedy (0) completions have no distribution to take a log-prob of.
        raise bad(f"temperature: expected a number > 0 (the sampling temperature; default 1), got {json.dumps(temperature)}")
    top_p = record.get("top_p", 1.0)
    if not _is_number(top_p) or not 0 < top_p <= 1:
        raise bad(f"top_p: expected a number in (0, 1] (default 1), got {json.dumps(top_p)}")
    if emittable is not None:
        for index in range(1, len(token_ids)):
            if loss_mask[index] and not bool(emittable[token_ids[index]]):
                raise bad(f"tokenIds[{index}] = {token_ids[index]} has lossMask 1 but is a token the model cannot emit")
    return Sample(line, record["taskId"], record["episodeUuid"], token_ids, [int(f) for f in loss_mask],
                  [None if v is None else float(v) for v in logprobs], float(reward), float(temperature), float(top_p))


def read_batch(path: str, vocab_size: int, max_context: int, emittable: torch.Tensor | None) -> list[Sample]:
    emittable_cpu = emittable.cpu() if emittable is not None else None
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise BadBatch(f"batch_file: cannot read {path}: {error}") from error
    samples = [parse_sample(raw, path, number, vocab_size, max_context, emittable_cpu)
               for number, raw in enumerate(lines, start=1) if raw.strip()]
    if not samples:
        raise BadBatch(f"{path}: the batch has no samples")
    if sum(sample.trained_tokens for sample in samples) == 0:
        raise BadBatch(f"{path}: no sample has a lossMask 1 token after position 0; nothing to train")
    return samples


def assign_advantages(samples: list[Sample]) -> None:
    """GRPO: (reward - group mean) / (group std + 1e-6) per taskId, with each episode counted
    once even when it contributes several samples (population std, as the TS engine)."""
    episode_rewards: dict[str, dict[str, float]] = {}
    for sample in samples:
        episode_rewards.setdefault(sample.task_id, {}).setdefault(sample.episode_uuid, sample.reward)
    statistics = {}
    for task_id, rewards in episode_rewards.items():
        values = list(rewards.values())
        mean = sum(values) / len(values)
        std = math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
        statistics[task_id] = (mean, std)
    for sample in samples:
        mean, std = statistics[sample.task_id]
        sample.advantage = (sample.reward - mean) / (std + 1e-6)


def episode_reward_stats(samples: list[Sample]) -> tuple[float, float]:
    rewards = list({(s.task_id, s.episode_uuid): s.reward for s in samples}.values())
    mean = sum(rewards) / len(rewards)
    return mean, math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))


def pack_micro_batches(samples: list[Sample], token_budget: int) -> list[list[Sample]]:
    """Samples sorted by length, then consecutive ones while rows x longest row (the padded
    size, which is what memory costs) stays within the budget; a sample longer than the
    budget goes alone. Sorting keeps the padding small; the order does not change the
    gradient, which is a sum over all samples."""
    batches: list[list[Sample]] = []
    current: list[Sample] = []
    longest = 0
    for sample in sorted(samples, key=lambda s: len(s.token_ids)):
        length = len(sample.token_ids)
        if current and (len(current) + 1) * max(longest, length) > token_budget:
            batches.append(current)
            current, longest = [], 0
        current.append(sample)
        longest = max(longest, length)
    if current:
        batches.append(current)
    return batches
