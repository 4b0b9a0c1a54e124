"""load_policy(model_path, device): one wrapper for a tiny model dir or a transformers model.

Both the trainer and the reference server go through this wrapper, so the chat template,
the set of tokens the model may emit and the log-prob computation are the same code on both
sides. A directory whose config.json says format a3r-tiny/1 is a tiny model; any other path
is loaded with transformers (imported only then).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch

from .errors import BadRequest, ModelNotFound

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


class Policy:
    """What the trainer and the server need from a model. Subclasses fill these in."""

    kind: str  # "tiny" | "transformers"
    model_path: str
    device: torch.device
    vocab_size: int  # width of the logits
    max_context: int
    stop_token_ids: frozenset[int]
    # Boolean [vocab_size] on device: the ids the model may emit, or None for all of them.
    # Sampling and the trainer's log-probs both mask the others to -inf.
    emittable_mask: torch.Tensor | None
    model: torch.nn.Module

    # -- text --------------------------------------------------------------------------
    def encode_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        raise NotImplementedError

    def decode(self, token_ids: list[int]) -> str:
        raise NotImplementedError

    # -- training ----------------------------------------------------------------------
    def forward_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits [batch, length, vocab] of the trainable model (adapter enabled)."""
        raise NotImplementedError

    def selected_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        predict: torch.Tensor) -> torch.Tensor:
        """Logits [N, vocab] at the positions t where predict[:, t] (the ones whose next
        token is trained), in row-major order. This default computes every position's
        logits and selects; a subclass that can should apply lm_head to the selected
        hidden states only."""
        return self.forward_logits(input_ids, attention_mask)[:, :-1][predict]

    def add_lora(self, rank: int, alpha: float, dropout: float, target_modules: list[str] | None, seed: int) -> None:
        raise NotImplementedError

    def reference(self):
        """Context manager: the base model (adapters disabled), the KL reference."""
        raise NotImplementedError

    def set_dropout_active(self, active: bool) -> None:
        """Base model always in eval mode; only LoRA dropout follows `active`."""
        raise NotImplementedError

    def enable_gradient_checkpointing(self) -> None:
        pass

    def save_adapter(self, directory: str | Path) -> None:
        raise NotImplementedError

    def trainable_named_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        return [(name, p) for name, p in self.model.named_parameters() if p.requires_grad]

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    # -- serving -----------------------------------------------------------------------
    def load_adapter(self, name: str, path: str) -> None:
        raise NotImplementedError

    def unload_adapter(self, name: str) -> None:
        raise NotImplementedError

    @contextmanager
    def use_adapter(self, name: str | None) -> Iterator[None]:
        raise NotImplementedError
        yield

    def batch_next_token_logits(self, sequences: list[list[int]]) -> torch.Tensor:
        """Float32 logits [len(sequences), vocab] for the token after each sequence, with
        the adapter chosen by use_adapter: one padded forward for a batch of requests."""
        raise NotImplementedError

    def next_token_logits(self, token_ids: list[int], cache: Any) -> tuple[torch.Tensor, Any]:
        """Float32 logits [vocab] for the token after `token_ids`, given the cache returned
        by the previous call for a prefix of them (None on the first call)."""
        raise NotImplementedError


def right_padded(sequences: list[list[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ids [B, T], attention mask [B, T], index of each row's last real token [B])."""
    longest = max(len(sequence) for sequence in sequences)
    ids = torch.zeros(len(sequences), longest, dtype=torch.long)
    attention = torch.zeros(len(sequences), longest, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        attention[row, : len(sequence)] = 1
    last = torch.tensor([len(sequence) - 1 for sequence in sequences], dtype=torch.long)
    return ids.to(device), attention.to(device), last.to(device)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise BadRequest(f"device: {device!r} requested but torch.cuda.is_available() is false")
        return torch.device(device)
    raise BadRequest(f"device: must be auto, cpu or cuda, got {device!r}")


def looks_like_hub_id(model_path: str) -> bool:
    return _HUB_ID.fullmatch(model_path) is not None


def load_policy(model_path: str, device: str = "auto") -> Policy:
    from .tiny.store import is_tiny_model_dir

    resolved = resolve_device(device)
    if is_tiny_model_dir(model_path):
        from .tiny.policy import TinyPolicy

        return TinyPolicy(model_path, resolved)
    from .hf_policy import TransformersPolicy  # imports transformers lazily inside

    # A path that does not exist may still be a hub id ("org/name") found in the local cache.
    if not Path(model_path).exists() and not looks_like_hub_id(model_path):
        raise ModelNotFound(f"model not found: {model_path}")
    return TransformersPolicy(model_path, resolved)
