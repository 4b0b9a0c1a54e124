"""The Policy wrapper for tiny model dirs (see ..models.Policy)."""

from __future__ import annotations

import copy
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch

from ..errors import AdapterInvalid, BadRequest
from ..models import Policy, right_padded
from .lora import LoRALinear, LoraSettings, adapters_disabled, inject_lora, read_adapter, save_adapter
from .store import load_model_dir
from .tokenizer import END_TOKEN_ID


class TinyPolicy(Policy):
    kind = "tiny"

    def __init__(self, model_path: str, device: torch.device):
        self.model_path = str(Path(model_path).resolve())
        self.device = device
        model, self.tokenizer, _ = load_model_dir(model_path)
        self.model = model.to(device).eval()
        self.vocab_size = self.tokenizer.vocab_size
        self.max_context = model.config.max_context
        self.stop_token_ids = frozenset({END_TOKEN_ID})
        mask = torch.zeros(self.vocab_size, dtype=torch.bool)
        mask[self.tokenizer.emittable_ids] = True
        self.emittable_mask = mask.to(device)
        self.lora_settings: LoraSettings | None = None
        # Serving: one LoRA-wrapped copy of the (small) model per loaded adapter; None is the base.
        self._served: dict[str | None, torch.nn.Module] = {None: self.model}
        self._current: torch.nn.Module = self.model

    def encode_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        try:
            return self.tokenizer.encode_chat(messages, add_generation_prompt)
        except ValueError as error:
            raise BadRequest(f"messages: {error}") from error

    def decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids)

    def forward_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids)  # right padding only: the causal mask makes attention_mask moot

    def add_lora(self, rank: int, alpha: float, dropout: float, target_modules: list[str] | None, seed: int) -> None:
        settings = LoraSettings(rank=rank, alpha=alpha, dropout=dropout)
        if target_modules:
            settings.target_modules = list(target_modules)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            wrapped = inject_lora(self.model, settings)
        if not wrapped:
            raise BadRequest(f"lora.target_modules: none of {settings.target_modules} names a linear layer of the tiny model")
        self.model.to(self.device)
        self.lora_settings = settings

    def reference(self):
        return adapters_disabled(self.model)

    def set_dropout_active(self, active: bool) -> None:
        self.model.eval()
        for module in self.model.modules():
            if isinstance(module, LoRALinear):
                module.dropout.train(active)

    def save_adapter(self, directory: str | Path) -> None:
        assert self.lora_settings is not None, "add_lora first"
        save_adapter(self.model, self.lora_settings, directory, self.model_path)

    def load_adapter(self, name: str, path: str) -> None:
        try:
            settings, state = read_adapter(path)
            served = copy.deepcopy(self._served[None])
            inject_lora(served, settings)
            missing, unexpected = served.load_state_dict(state, strict=False)
            lora_missing = [key for key in missing if ".lora_" in key]
            if lora_missing or unexpected:
                raise ValueError(f"adapter does not fit the model (missing {lora_missing[:3]}, unexpected {unexpected[:3]})")
        except (ValueError, KeyError, OSError, RuntimeError, TypeError) as error:
            raise AdapterInvalid(f"invalid adapter at {path}: {error}") from error
        self._served[name] = served.to(self.device).eval()

    def unload_adapter(self, name: str) -> None:
        del self._served[name]

    @contextmanager
    def use_adapter(self, name: str | None) -> Iterator[None]:
        self._current = self._served[name]
        try:
            yield
        finally:
            self._current = self._served[None]

    def batch_next_token_logits(self, sequences: list[list[int]]) -> torch.Tensor:
        # Right padding: the causal mask keeps pads out of every real position.
        ids, _, last = right_padded(sequences, self.device)
        with torch.no_grad():
            logits = self._current(ids)
            return logits[torch.arange(len(sequences), device=self.device), last].float()

    def next_token_logits(self, token_ids: list[int], cache: Any) -> tuple[torch.Tensor, Any]:
        # No KV cache: the model is tiny and recomputing keeps one code path with training.
        with torch.no_grad():
            ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
            return self._current(ids)[0, -1].float(), None
