"""A minimal LoRA for the tiny model: y = W x + b + (alpha / rank) * B(A(dropout(x))).

B starts at zero, so a freshly added adapter leaves the model unchanged (the trainer's first
behaviour log-probs equal the base model's). `enabled=False` on every layer gives the base
model back, which is the KL reference."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn

ADAPTER_FORMAT = "a3r-tiny-lora/1"
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "fc_in", "fc_out", "lm_head")


@dataclass
class LoraSettings:
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS))

    @property
    def scale(self) -> float:
        return self.alpha / self.rank


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, settings: LoraSettings):
        super().__init__()
        self.base = base
        self.scale = settings.scale
        self.enabled = True
        self.dropout = nn.Dropout(settings.dropout) if settings.dropout > 0 else nn.Identity()
        self.lora_a = nn.Parameter(torch.empty(settings.rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, settings.rank))
        nn.init.kaiming_uniform_(self.lora_a, a=5 ** 0.5)
        for parameter in base.parameters():
            parameter.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        if self.enabled:
            out = out + (self.dropout(x) @ self.lora_a.t() @ self.lora_b.t()) * self.scale
        return out


def inject_lora(model: nn.Module, settings: LoraSettings) -> list[str]:
    """Wrap every nn.Linear whose attribute name is a target; freeze everything else.
    Returns the wrapped module paths (an empty list is an error for the caller)."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    wrapped = []
    for path, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if child_name in settings.target_modules and isinstance(child, nn.Linear):
                setattr(module, child_name, LoRALinear(child, settings))
                wrapped.append(f"{path}.{child_name}" if path else child_name)
    return wrapped


def lora_layers(model: nn.Module) -> list[LoRALinear]:
    return [module for module in model.modules() if isinstance(module, LoRALinear)]


@contextmanager
def adapters_disabled(model: nn.Module):
    layers = lora_layers(model)
    for layer in layers:
        layer.enabled = False
    try:
        yield
    finally:
        for layer in layers:
            layer.enabled = True


def adapter_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().cpu().clone() for name, tensor in model.state_dict().items()
            if name.endswith(".lora_a") or name.endswith(".lora_b")}


def save_adapter(model: nn.Module, settings: LoraSettings, directory: str | Path, base_model: str) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"format": ADAPTER_FORMAT, "base_model": base_model, **asdict(settings)}
    # Write under temporary names then rename, so a reader never sees half an adapter.
    (directory / "adapter.pt.tmp").unlink(missing_ok=True)
    torch.save(adapter_state_dict(model), directory / "adapter.pt.tmp")
    (directory / "adapter_config.json.tmp").write_text(json.dumps(config, indent=1) + "\n")
    (directory / "adapter.pt.tmp").replace(directory / "adapter.pt")
    (directory / "adapter_config.json.tmp").replace(directory / "adapter_config.json")


def read_adapter(directory: str | Path) -> tuple[LoraSettings, dict[str, torch.Tensor]]:
    """Read an adapter dir; raises ValueError naming the problem."""
    directory = Path(directory)
    config_path, weights_path = directory / "adapter_config.json", directory / "adapter.pt"
    if not config_path.is_file() or not weights_path.is_file():
        raise ValueError(f"{directory}: expected adapter_config.json and adapter.pt")
    config = json.loads(config_path.read_text())
    if config.get("format") != ADAPTER_FORMAT:
        raise ValueError(f"{config_path}: format is {config.get('format')!r}, expected {ADAPTER_FORMAT!r}")
    settings = LoraSettings(rank=int(config["rank"]), alpha=float(config["alpha"]),
                            dropout=float(config["dropout"]), target_modules=list(config["target_modules"]))
    state = torch.load(weights_path, map_location="cpu")
    if not isinstance(state, dict):
        raise ValueError(f"{weights_path}: not a state dict")
    return settings, state
