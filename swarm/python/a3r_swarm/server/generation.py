"""Sampling, with vLLM's rules for the fields the swarm sends: temperature and top_p.

A temperature below 1e-5 is greedy (vLLM's threshold). Otherwise the logits are divided by
the temperature, then top_p keeps the smallest set of most likely tokens whose mass reaches
top_p (vLLM's rule: sort ascending, drop the tokens whose cumulative mass is at most
1 - top_p, always keep the most likely one), and the token is drawn from what is left. Every
other vLLM sampling field must be at its neutral value (requests.py refuses the rest): the
trainer corrects only for the temperature.

The log-prob reported for each token follows vLLM's --logprobs-mode: `processed_logprobs`
(this server's default) is the log-prob in the distribution the token was drawn from, after
temperature and top_p, which with top_p 1 is exactly what the trainer computes for the same
weights (log_softmax(logits / T), ratio 1); `raw_logprobs` (vLLM's default) is the model's
temperature-1 log-prob. Both over the tokens the model may emit (..logprobs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..logprobs import masked_log_softmax
from ..models import Policy

GREEDY_BELOW = 1e-5
LOGPROBS_MODES = ("processed_logprobs", "raw_logprobs")


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    stop: list[str] = field(default_factory=list)

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW


@dataclass
class Completion:
    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str  # "stop" | "length"


def apply_top_p(log_probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Mask (-inf) the tokens outside the nucleus and renormalise, as vLLM does."""
    if top_p >= 1.0:
        return log_probs
    ascending, order = torch.sort(log_probs, descending=False)
    cumulative = torch.cumsum(ascending.exp(), dim=-1)
    drop = cumulative <= 1 - top_p
    drop[-1] = False
    kept = ascending.masked_fill(drop, float("-inf"))
    nucleus = torch.empty_like(log_probs).scatter_(0, order, kept)
    return torch.log_softmax(nucleus, dim=-1)


def trim_at_stop(text: str, stops: list[str]) -> str | None:
    """The text before the earliest stop string, or None when none occurs (OpenAI drops
    the stop string and everything after it)."""
    cuts = [index for index in (text.find(stop) for stop in stops if stop) if index >= 0]
    return text[: min(cuts)] if cuts else None


class Sequence:
    """One request's generation, advanced one token per batched step."""

    def __init__(self, prompt_ids: list[int], params: SamplingParams, generator: torch.Generator, max_length: int,
                 logprobs_mode: str = "processed_logprobs"):
        self.ids = list(prompt_ids)
        self.params, self.generator, self.max_length = params, generator, max_length
        self.logprobs_mode = logprobs_mode
        self.completion: list[int] = []
        self.logprobs: list[float] = []
        self.text = ""
        self.finish: str | None = None
        if params.max_tokens < 1 or len(self.ids) >= max_length:
            self.finish = "length"

    @property
    def done(self) -> bool:
        return self.finish is not None

    def accept(self, policy: Policy, token: int, logprob: float) -> None:
        self.ids.append(token)
        self.completion.append(token)
        self.logprobs.append(logprob)
        self.text = policy.decode(self.completion)
        if token in policy.stop_token_ids:
            self.finish = "stop"
        elif self.params.stop and (trimmed := trim_at_stop(self.text, self.params.stop)) is not None:
            self.text, self.finish = trimmed, "stop"
        elif len(self.completion) >= self.params.max_tokens or len(self.ids) >= self.max_length:
            self.finish = "length"

    def result(self) -> Completion:
        return Completion(self.completion, self.logprobs, self.text, self.finish or "length")


def advance_batch(policy: Policy, sequences: list[Sequence], logits: torch.Tensor) -> None:
    """One token for every sequence from its row of `logits` [B, V], all rows at once
    (the per-row Python work would otherwise dominate a step over a 151k vocabulary). Each
    row draws one uniform from its own generator and inverts its cumulative distribution,
    so a seeded request's tokens do not depend on the other rows."""
    emittable = policy.emittable_mask
    raw = masked_log_softmax(logits, emittable)
    temperatures = torch.tensor([1.0 if s.params.greedy else s.params.temperature for s in sequences],
                                device=logits.device)
    processed = masked_log_softmax(logits.float() / temperatures[:, None], emittable)
    for row, sequence in enumerate(sequences):
        if sequence.params.greedy:
            processed[row] = raw[row]
        elif sequence.params.top_p < 1:
            processed[row] = apply_top_p(processed[row], sequence.params.top_p)
    uniforms = torch.tensor([0.0 if s.params.greedy else float(torch.rand((), generator=s.generator)) for s in sequences],
                            device=logits.device)
    cdf = processed.exp().cumsum(dim=-1)
    drawn = torch.searchsorted(cdf, (uniforms * cdf[:, -1])[:, None], right=True)[:, 0].clamp(max=logits.shape[-1] - 1)
    greedy = torch.tensor([s.params.greedy for s in sequences], device=logits.device)
    tokens = torch.where(greedy, raw.argmax(dim=-1), drawn)
    # A rounding at the top of the cumulative sum must never pick an id of probability 0.
    impossible = ~torch.isfinite(processed.gather(1, tokens[:, None])[:, 0])
    tokens = torch.where(impossible, processed.argmax(dim=-1), tokens)
    reported = {"processed_logprobs": processed, "raw_logprobs": raw}
    for row, (sequence, token) in enumerate(zip(sequences, tokens.tolist())):
        sequence.accept(policy, token, float(reported[sequence.logprobs_mode][row, token]))


def generate(policy: Policy, prompt_ids: list[int], params: SamplingParams, generator: torch.Generator,
             max_length: int, logprobs_mode: str = "processed_logprobs") -> Completion:
    """One request alone (tests and tools); the server batches through batcher.py.
    `max_length` bounds prompt + completion (the server's --max-model-len)."""
    sequence = Sequence(prompt_ids, params, generator, max_length, logprobs_mode)
    while not sequence.done:
        advance_batch(policy, [sequence], policy.batch_next_token_logits([sequence.ids]))
    return sequence.result()
