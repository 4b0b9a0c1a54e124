"""Sampling one completion: temperature (0 = greedy), top_p, max_tokens, stop strings.

The log-prob reported for each sampled token is the model's at temperature 1 over the
tokens it may emit (..logprobs.masked_log_softmax), i.e. exactly the trainer's current
log-prob for the same weights, whatever temperature/top_p the sample was drawn with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..logprobs import masked_log_softmax
from ..models import Policy


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    stop: list[str] = field(default_factory=list)


@dataclass
class Completion:
    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str  # "stop" | "length"


def choose_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> int:
    if params.temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float().cpu() / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_probs, dim=0) - sorted_probs
        # Keep the smallest prefix whose mass reaches top_p (always at least the top token).
        sorted_probs[before >= params.top_p] = 0.0
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))


def trim_at_stop(text: str, stops: list[str]) -> str | None:
    """The text before the earliest stop string, or None when none occurs (OpenAI drops
    the stop string and everything after it)."""
    cuts = [index for index in (text.find(stop) for stop in stops if stop) if index >= 0]
    return text[: min(cuts)] if cuts else None


def generate(policy: Policy, prompt_ids: list[int], params: SamplingParams, generator: torch.Generator,
             max_length: int) -> Completion:
    """`max_length` bounds prompt + completion (the server's --max-model-len)."""
    ids = list(prompt_ids)
    completion: list[int] = []
    logprobs: list[float] = []
    cache = None
    finish = "length"
    text = ""
    while len(completion) < params.max_tokens and len(ids) < max_length:
        logits, cache = policy.next_token_logits(ids, cache)
        log_probs = masked_log_softmax(logits, policy.emittable_mask)
        # Sampling from the masked log-probs (not raw logits) keeps un-emittable ids at 0.
        token = choose_token(log_probs, params, generator)
        ids.append(token)
        completion.append(token)
        logprobs.append(float(log_probs[token]))
        if token in policy.stop_token_ids:
            finish = "stop"
            text = policy.decode(completion)
            break
        text = policy.decode(completion)
        if params.stop:
            trimmed = trim_at_stop(text, params.stop)
            if trimmed is not None:
                text, finish = trimmed, "stop"
                break
    return Completion(completion, logprobs, text, finish)
