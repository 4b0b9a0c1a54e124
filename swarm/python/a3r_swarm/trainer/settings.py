"""The `load` request's settings, with the protocol's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BadRequest
from .fields import get_field, reject_unknown


@dataclass
class LoraOptions:
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: list[str] | None = None


@dataclass
class OptimizerOptions:
    lr: float = 1e-3
    kl_coef: float = 0.0
    clip_low: float = 0.2
    clip_high: float = 0.2
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    # Dual-clip constant c (> 1): a negative-advantage token's loss is capped at c * |A|,
    # which bounds what a stale sample can do (see grpo.py); 0 turns it off. 3 as verl.
    dual_clip: float = 3.0


@dataclass
class LoadSettings:
    model: str
    device: str = "auto"
    seed: int = 0
    lora: LoraOptions = field(default_factory=LoraOptions)
    optimizer: OptimizerOptions = field(default_factory=OptimizerOptions)
    micro_batch_tokens: int = 4096
    gradient_checkpointing: bool = False
    # Per-step adapter folders (train's output_dir) kept on disk: the newest N, the one
    # being served and the one it replaces; older ones the trainer wrote are deleted.
    # 0 keeps all. Checkpoints (save) are never deleted here.
    keep_adapters: int = 2


LOAD_FIELDS = {"id", "op", "model", "device", "seed", "lora", "optimizer", "micro_batch_tokens", "gradient_checkpointing",
               "keep_adapters"}


def parse_load(request: dict) -> LoadSettings:
    reject_unknown(request, LOAD_FIELDS)
    settings = LoadSettings(model=get_field(request, "model", "str"))
    settings.device = get_field(request, "device", "str", default="auto")
    settings.seed = get_field(request, "seed", "int", default=0)
    settings.micro_batch_tokens = get_field(request, "micro_batch_tokens", "int", default=4096, minimum=1)
    settings.gradient_checkpointing = get_field(request, "gradient_checkpointing", "bool", default=False)
    settings.keep_adapters = get_field(request, "keep_adapters", "int", default=2, minimum=0)

    lora = get_field(request, "lora", "object", default={})
    reject_unknown(lora, {"rank", "alpha", "dropout", "target_modules"}, "lora.")
    settings.lora.rank = get_field(lora, "rank", "int", where="lora.", default=8, minimum=1)
    settings.lora.alpha = get_field(lora, "alpha", "number", where="lora.", default=16.0)
    settings.lora.dropout = get_field(lora, "dropout", "number", where="lora.", default=0.0, minimum=0, maximum=0.99)
    targets = get_field(lora, "target_modules", "list", where="lora.", default=None)
    if targets is not None:
        for index, name in enumerate(targets):
            if not isinstance(name, str) or not name:
                raise BadRequest(f"lora.target_modules[{index}]: expected a non-empty string")
    settings.lora.target_modules = targets

    opt = get_field(request, "optimizer", "object", default={})
    reject_unknown(opt, set(OptimizerOptions.__dataclass_fields__), "optimizer.")
    o = settings.optimizer
    o.lr = get_field(opt, "lr", "number", where="optimizer.", default=o.lr, minimum=0)
    o.kl_coef = get_field(opt, "kl_coef", "number", where="optimizer.", default=o.kl_coef, minimum=0)
    o.clip_low = get_field(opt, "clip_low", "number", where="optimizer.", default=o.clip_low, minimum=0, maximum=1)
    o.clip_high = get_field(opt, "clip_high", "number", where="optimizer.", default=o.clip_high, minimum=0)
    o.weight_decay = get_field(opt, "weight_decay", "number", where="optimizer.", default=o.weight_decay, minimum=0)
    # 0 turns clipping off (the norm is still measured and reported).
    o.max_grad_norm = get_field(opt, "max_grad_norm", "number", where="optimizer.", default=o.max_grad_norm, minimum=0)
    o.dual_clip = get_field(opt, "dual_clip", "number", where="optimizer.", default=o.dual_clip, minimum=0)
    if 0 < o.dual_clip <= 1:
        raise BadRequest(f"optimizer.dual_clip: must be 0 (off) or greater than 1, got {o.dual_clip}")
    return settings
