"""The GRPO / PPO-clip loss of one micro-batch.

Token i is predicted from the logits at position i - 1. Per loss-masked token:
  ratio = exp(logp_current - logp_behaviour)   (behaviour unknown -> current, detached: ratio 1)
  loss  = -min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)  [+ kl_coef * k3]
k3 = exp(ref - cur) - (ref - cur) - 1 against the base model (adapters disabled). Each
micro-batch's sum is divided by the masked-token count of the WHOLE batch, so accumulating
the gradients of all micro-batches gives exactly the token mean over the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..logprobs import entropy_from_log_probs, masked_log_softmax
from ..models import Policy
from .batch import Sample


@dataclass
class LossSums:
    """Sums over masked tokens, divided by the batch token count only at the end."""

    loss: float = 0.0  # already divided by the batch's masked-token count
    kl: float = 0.0
    entropy: float = 0.0
    clipped: float = 0.0
    masked_tokens: int = 0
    tokens: int = 0

    def add(self, other: "LossSums") -> None:
        for name in ("loss", "kl", "entropy", "clipped", "masked_tokens", "tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [B, T], right padded
    attention_mask: torch.Tensor  # [B, T]
    predict: torch.Tensor  # [B, T-1] bool: position t+1 is trained (predicted from t)
    targets: torch.Tensor  # [N] the trained tokens, row-major order
    behaviour: torch.Tensor  # [N] float, NaN where unknown
    advantages: torch.Tensor  # [N]
    tokens: int


def collate(samples: list[Sample], device: torch.device) -> MicroBatch:
    longest = max(len(s.token_ids) for s in samples)
    ids = torch.zeros(len(samples), longest, dtype=torch.long)
    attention = torch.zeros(len(samples), longest, dtype=torch.long)
    mask = torch.zeros(len(samples), longest, dtype=torch.bool)
    behaviour = torch.full((len(samples), longest), float("nan"), dtype=torch.float32)
    advantages = torch.zeros(len(samples), longest, dtype=torch.float32)
    for row, sample in enumerate(samples):
        n = len(sample.token_ids)
        ids[row, :n] = torch.tensor(sample.token_ids)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(sample.loss_mask, dtype=torch.bool)
        behaviour[row, :n] = torch.tensor([float("nan") if v is None else v for v in sample.behaviour_logprobs])
        advantages[row, :n] = sample.advantage
    predict = mask[:, 1:]
    return MicroBatch(ids.to(device), attention.to(device), predict.to(device), ids[:, 1:][predict].to(device),
                      behaviour[:, 1:][predict].to(device), advantages[:, 1:][predict].to(device),
                      sum(len(s.token_ids) for s in samples))


def trained_log_probs(policy: Policy, batch: MicroBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-prob of each trained token [N], full masked log-softmax rows [N, V])."""
    logits = policy.forward_logits(batch.input_ids, batch.attention_mask)
    # Select the predicting positions before the float32 log_softmax: full-vocab float32
    # logits for every position would cost far more memory than the trained ones.
    rows = masked_log_softmax(logits[:, :-1][batch.predict], policy.emittable_mask)
    return rows.gather(1, batch.targets[:, None])[:, 0], rows


def micro_batch_loss(policy: Policy, batch: MicroBatch, batch_masked_tokens: int, *, clip_low: float,
                     clip_high: float, kl_coef: float) -> tuple[torch.Tensor, LossSums]:
    reference = None
    if kl_coef > 0:
        with torch.no_grad(), policy.reference():
            reference, _ = trained_log_probs(policy, batch)
    current, rows = trained_log_probs(policy, batch)
    behaviour = torch.where(torch.isnan(batch.behaviour), current.detach(), batch.behaviour)
    ratio = torch.exp(current - behaviour)
    advantages = batch.advantages
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * advantages
    per_token = -torch.minimum(unclipped, clipped)
    clip_active = ((advantages > 0) & (ratio > 1 + clip_high)) | ((advantages < 0) & (ratio < 1 - clip_low))
    kl_sum = 0.0
    if reference is not None:
        log_ratio = reference - current
        k3 = torch.exp(log_ratio) - log_ratio - 1
        per_token = per_token + kl_coef * k3
        kl_sum = float(k3.detach().sum())
    loss = per_token.sum() / batch_masked_tokens
    sums = LossSums(loss=float(loss.detach()), kl=kl_sum, entropy=float(entropy_from_log_probs(rows.detach()).sum()),
                    clipped=float(clip_active.sum()), masked_tokens=int(current.numel()), tokens=batch.tokens)
    return loss, sums
