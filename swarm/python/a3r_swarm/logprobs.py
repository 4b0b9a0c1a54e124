"""Log-probs over what a model may emit, one implementation for the sampler and the trainer.

Both mask the logits of ids the model may not emit to -inf before log_softmax, so the
log-prob the server reports for a sampled token is exactly the trainer's current log-prob for
the same weights (ratio 1 on unchanged weights)."""

from __future__ import annotations

import torch


def masked_log_softmax(logits: torch.Tensor, emittable_mask: torch.Tensor | None) -> torch.Tensor:
    logits = logits.float()
    if emittable_mask is not None:
        logits = logits.masked_fill(~emittable_mask, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def entropy_from_log_probs(log_probs: torch.Tensor) -> torch.Tensor:
    """Entropy per row; masked ids (log-prob -inf, prob 0) contribute 0 rather than NaN."""
    finite = torch.isfinite(log_probs)
    safe = torch.where(finite, log_probs, torch.zeros_like(log_probs))
    return -(safe.exp() * safe).sum(dim=-1)
