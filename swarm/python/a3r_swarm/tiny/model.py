"""A small pre-norm causal transformer built from torch.nn layers.

Linear layers carry the names LoRA targets by (q_proj, k_proj, v_proj, o_proj, fc_in,
fc_out, lm_head). Attention is written out by hand so the same code runs on torch 1.13 (no
scaled_dot_product_attention) and 2.x. Only right padding is supported: with a causal mask,
pad tokens after a sequence cannot change the logits of the positions before them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
from torch import nn


@dataclass
class TinyConfig:
    vocab_size: int
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    mlp_hidden: int = 256
    max_context: int = 256
    init_std: float = 0.02
    # Per head: how many most recent tokens it may attend to (0 = all). Local heads keep
    # the last few words prominent at the answer position instead of averaging them away
    # among every token of the (mostly shared) prompt.
    attention_windows: list[int] = field(default_factory=lambda: [4, 4, 4, 4])
    # The MLP is a random Fourier-feature layer: sin(W x + b) with a wide input gain maps
    # prompts that differ in one word to nearly orthogonal features (cosine ~0.2 instead of
    # ~0.95 with GELU), so a LoRA on lm_head can learn a per-prompt answer in a few steps.
    # The ids lm_head produces logits for (the tokenizer's emittable ids); every other id
    # gets -inf. The CPU builds of torch use a slow generic BLAS, and the 1024 hash buckets
    # the model can never say would otherwise make lm_head 30 times wider than needed.
    output_ids: list[int] = field(default_factory=list)
    mlp_activation: str = "sin"
    mlp_input_gain: float = 6.0
    mlp_output_gain: float = 3.0

    def to_json(self) -> dict:
        return asdict(self)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        if config.d_model % config.heads:
            raise ValueError("d_model must be divisible by heads")
        self.heads = config.heads
        windows = list(config.attention_windows) or [0] * config.heads
        if len(windows) != config.heads:
            raise ValueError(f"attention_windows has {len(windows)} entries for {config.heads} heads")
        self.windows = windows
        self.q_proj = nn.Linear(config.d_model, config.d_model)
        self.k_proj = nn.Linear(config.d_model, config.d_model)
        self.v_proj = nn.Linear(config.d_model, config.d_model)
        self.o_proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        batch, length, width = hidden.shape
        head_width = width // self.heads

        def split(x: torch.Tensor) -> torch.Tensor:
            return x.view(batch, length, self.heads, head_width).transpose(1, 2)

        q, k, v = split(self.q_proj(hidden)), split(self.k_proj(hidden)), split(self.v_proj(hidden))
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_width)
        scores = scores.masked_fill(self._blocked(length, hidden.device), float("-inf"))
        mixed = scores.softmax(dim=-1) @ v
        return self.o_proj(mixed.transpose(1, 2).reshape(batch, length, width))

    def _blocked(self, length: int, device: torch.device) -> torch.Tensor:
        """[heads, length, length]: True where a query may not look (the future, or
        beyond the head's window)."""
        positions = torch.arange(length, device=device)
        distance = positions[:, None] - positions[None, :]
        future = distance < 0
        blocked = [future | (distance >= window) if window > 0 else future for window in self.windows]
        return torch.stack(blocked)[None]


class Block(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.d_model)
        self.attention = CausalSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model)
        self.fc_in = nn.Linear(config.d_model, config.mlp_hidden)
        self.fc_out = nn.Linear(config.mlp_hidden, config.d_model)
        activations = {"sin": torch.sin, "gelu": nn.functional.gelu}
        if config.mlp_activation not in activations:
            raise ValueError(f"mlp_activation must be one of {sorted(activations)}")
        self.activation = activations[config.mlp_activation]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.attention(self.attention_norm(hidden))
        return hidden + self.fc_out(self.activation(self.fc_in(self.mlp_norm(hidden))))


class TinyCausalLM(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.max_context, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.final_norm = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, len(config.output_ids) or config.vocab_size, bias=False)
        self.register_buffer("output_ids", torch.tensor(config.output_ids, dtype=torch.long), persistent=False)
        self._init_weights()

    def _init_weights(self) -> None:
        # Unit-scale token embeddings and variance-preserving linears keep each token's
        # identity strong through the blocks; the MLP gains set how far apart different
        # prompts land (see TinyConfig); a small lm_head starts the model near uniform over
        # what it may emit, so sampled answers begin at chance level.
        config = self.config
        for name, module in self.named_modules():
            if isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=1.0 if module is self.token_embedding else config.init_std)
            elif isinstance(module, nn.Linear):
                gain = {"fc_in": config.mlp_input_gain, "fc_out": config.mlp_output_gain}.get(name.rsplit(".", 1)[-1], 1.0)
                std = config.init_std if module is self.lm_head else gain * module.in_features ** -0.5
                nn.init.normal_(module.weight, std=std)
                if module.bias is not None:
                    if name.endswith("fc_in") and config.mlp_activation == "sin":
                        nn.init.uniform_(module.bias, -math.pi, math.pi)  # random phases
                    else:
                        nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        if length > self.config.max_context:
            raise ValueError(f"sequence of {length} tokens exceeds the tiny model's max context of {self.config.max_context}")
        positions = torch.arange(length, device=input_ids.device)
        hidden = self.token_embedding(input_ids) + self.position_embedding(positions)[None]
        for block in self.blocks:
            hidden = block(hidden)
        logits = self.lm_head(self.final_norm(hidden))
        if not self.config.output_ids:
            return logits
        full = logits.new_full((*logits.shape[:-1], self.config.vocab_size), float("-inf"))
        return full.index_copy(-1, self.output_ids, logits)
