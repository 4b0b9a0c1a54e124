"""The GRPO / PPO-clip loss of one micro-batch.

Token i is predicted from the logits at position i - 1, divided by the temperature its
sample was drawn at (log_softmax(logits / T), as TRL and verl do: the log-prob of the
distribution that was actually sampled, before top_p truncation). Per loss-masked token:
  ratio = exp(logp_current - logp_behaviour)   (behaviour unknown -> current, detached: ratio 1)
  loss  = -min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)
  A < 0: loss = min(loss, -dual_clip * A)                      (dual-clip, when dual_clip > 0)
  [+ kl_coef * k3]
k3 = exp(ref - cur) - (ref - cur) - 1 against the base model (adapters disabled). Each
micro-batch's sum is divided by the masked-token count of the WHOLE batch, so accumulating
the gradients of all micro-batches gives exactly the token mean over the batch.

Why dual-clip: PPO's clip bounds the ratio only from the side that helps. For a negative
advantage and a ratio far above 1 (a stale sample whose behaviour log-prob is many nats
below the current one) min() picks ratio * A, unbounded, and one such token can dominate
the gradient (measured: a norm of 484 with 22% of a batch one step stale). Dual-clip caps
that term at dual_clip * |A| with zero gradient beyond it, keeps every fresh sample's
gradient unchanged (their ratio is 1), and needs no extra forward pass (unlike recomputing
behaviour log-probs); a truncated importance weight would also bound it but rescales the
positive-advantage tokens too.

Only the trained positions reach lm_head (Policy.selected_logits): prompt positions never
get vocabulary-sized logits, which is most of the memory and time of a step with long
prompts and a large vocabulary (TRL's logits_to_keep does the same for right-aligned
completions).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from ..logprobs import entropy_from_log_probs, masked_log_softmax
from ..models import Policy
from .batch import Sample

# A trained token whose |log ratio| exceeds this counts its sample as off-policy (stale, or
# sampled by kernels that differ from the trainer's): the CPU reference server and trainer
# agree within 1e-4; bf16 GPU kernels differ by about 1e-3..1e-2.
OFF_POLICY_LOG_RATIO = 0.05


@dataclass
class LossSums:
    """Sums over masked tokens, divided by the batch token count only at the end."""

    loss: float = 0.0  # already divided by the batch's masked-token count
    kl: float = 0.0
    entropy: float = 0.0
    clipped: float = 0.0
    dual_clipped: float = 0.0
    masked_tokens: int = 0
    tokens: int = 0
    behaviour_tokens: int = 0  # trained tokens with a behaviour log-prob
    ratio_sum: float = 0.0
    log_ratio_abs_sum: float = 0.0
    log_ratio_max: float = 0.0  # log of the ratio: finite even for a ratio of e^100
    log_ratio_min: float = 0.0
    off_policy_samples: int = 0

    def add(self, other: "LossSums") -> None:
        for field in fields(self):
            name = field.name
            if name == "log_ratio_max":
                self.log_ratio_max = max(self.log_ratio_max, other.log_ratio_max)
            elif name == "log_ratio_min":
                self.log_ratio_min = min(self.log_ratio_min, other.log_ratio_min)
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class MicroBatch:
    input_ids: torch.Tensor  # [B, T], right padded
    attention_mask: torch.Tensor  # [B, T]
    predict: torch.Tensor  # [B, T-1] bool: position t+1 is trained (predicted from t)
    targets: torch.Tensor  # [N] the trained tokens, row-major order
    behaviour: torch.Tensor  # [N] float, NaN where unknown
    advantages: torch.Tensor  # [N]
    temperatures: torch.Tensor  # [N] the sampling temperature of each trained token's sample
    rows: torch.Tensor  # [N] long: the micro-batch row (sample) of each trained token
    tokens: int


def collate(samples: list[Sample], device: torch.device) -> MicroBatch:
    longest = max(len(s.token_ids) for s in samples)
    ids = torch.zeros(len(samples), longest, dtype=torch.long)
    attention = torch.zeros(len(samples), longest, dtype=torch.long)
    mask = torch.zeros(len(samples), longest, dtype=torch.bool)
    behaviour = torch.full((len(samples), longest), float("nan"), dtype=torch.float32)
    advantages = torch.zeros(len(samples), longest, dtype=torch.float32)
    temperatures = torch.ones(len(samples), longest, dtype=torch.float32)
    rows = torch.arange(len(samples))[:, None].expand(len(samples), longest)
    for row, sample in enumerate(samples):
        n = len(sample.token_ids)
        ids[row, :n] = torch.tensor(sample.token_ids)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(sample.loss_mask, dtype=torch.bool)
        behaviour[row, :n] = torch.tensor([float("nan") if v is None else v for v in sample.behaviour_logprobs])
        advantages[row, :n] = sample.advantage
        temperatures[row, :n] = sample.temperature
    predict = mask[:, 1:]

    def trained(values: torch.Tensor) -> torch.Tensor:
        return values[:, 1:][predict].to(device)

    return MicroBatch(ids.to(device), attention.to(device), predict.to(device), trained(ids), trained(behaviour),
                      trained(advantages), trained(temperatures), trained(rows), sum(len(s.token_ids) for s in samples))


def trained_log_probs(policy: Policy, batch: MicroBatch, *, full_logits: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-prob of each trained token [N], full masked log-softmax rows [N, V]), at each
    token's sampling temperature. `full_logits` computes logits for every position and
    selects afterwards (the old path, kept to test that both give the same numbers)."""
    if full_logits:
        logits = policy.forward_logits(batch.input_ids, batch.attention_mask)[:, :-1][batch.predict]
    else:
        logits = policy.selected_logits(batch.input_ids, batch.attention_mask, batch.predict)
    logits = logits.float() / batch.temperatures[:, None]
    rows = masked_log_softmax(logits, policy.emittable_mask)
    return rows.gather(1, batch.targets[:, None])[:, 0], rows


def micro_batch_loss(policy: Policy, batch: MicroBatch, batch_masked_tokens: int, *, clip_low: float,
                     clip_high: float, kl_coef: float, dual_clip: float = 0.0,
                     full_logits: bool = False) -> tuple[torch.Tensor, LossSums]:
    reference = None
    if kl_coef > 0:
        with torch.no_grad(), policy.reference():
            reference, _ = trained_log_probs(policy, batch, full_logits=full_logits)
    current, rows = trained_log_probs(policy, batch, full_logits=full_logits)
    known = ~torch.isnan(batch.behaviour)
    behaviour = torch.where(known, batch.behaviour, current.detach())
    ratio = torch.exp(current - behaviour)
    advantages = batch.advantages
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * advantages
    per_token = -torch.minimum(unclipped, clipped)
    clip_active = ((advantages > 0) & (ratio > 1 + clip_high)) | ((advantages < 0) & (ratio < 1 - clip_low))
    dual_active = torch.zeros_like(clip_active)
    if dual_clip > 0:
        cap = -dual_clip * advantages  # > 0 where A < 0
        dual_active = (advantages < 0) & (per_token > cap)
        per_token = torch.where(dual_active, cap, per_token)
    kl_sum = 0.0
    if reference is not None:
        log_ratio = reference - current
        k3 = torch.exp(log_ratio) - log_ratio - 1
        per_token = per_token + kl_coef * k3
        kl_sum = float(k3.detach().sum())
    loss = per_token.sum() / batch_masked_tokens
    sums = LossSums(loss=float(loss.detach()), kl=kl_sum, entropy=float(entropy_from_log_probs(rows.detach()).sum()),
                    clipped=float(clip_active.sum()), dual_clipped=float(dual_active.sum()),
                    masked_tokens=int(current.numel()), tokens=batch.tokens)
    ratio_statistics(sums, (current - behaviour).detach(), known, batch.rows)
    return loss, sums


def ratio_statistics(sums: LossSums, log_ratio: torch.Tensor, known: torch.Tensor, rows: torch.Tensor) -> None:
    """How far the batch is from on-policy: the ratio over tokens with a behaviour
    log-prob, and the samples with any token beyond OFF_POLICY_LOG_RATIO."""
    if not bool(known.any()):
        return
    values = log_ratio[known].double()
    log_abs = values.abs()
    sums.behaviour_tokens = int(values.numel())
    sums.ratio_sum = float(values.clamp(max=80).exp().sum())
    sums.log_ratio_abs_sum = float(log_abs.sum())
    sums.log_ratio_max, sums.log_ratio_min = float(values.max()), float(values.min())
    worst = torch.zeros(int(rows.max()) + 1, device=log_ratio.device, dtype=torch.float64)
    worst.scatter_reduce_(0, rows[known], log_abs, reduce="amax")
    sums.off_policy_samples = int((worst > OFF_POLICY_LOG_RATIO).sum())
