"""A small pre-norm causal transformer built from torch.nn layers.

Linear layers carry the names LoRA targets by (q_proj, k_proj, v_proj, o_proj, fc_in,
fc_out, lm_head). Attention is written out by hand so the same code runs on torch 1.13 (no
scaled_dot_product_attention) and 2.x. Only right padding is supported: with a causal mask,
pad tokens after a sequence cannot change the logits of the positions before them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

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

    def to_json(self) -> dict:
        return asdict(self)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        if config.d_model % config.heads:
            raise ValueError("d_model must be divisible by heads")
        self.heads = config.heads
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
        future = torch.ones(length, length, dtype=torch.bool, device=hidden.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        mixed = scores.softmax(dim=-1) @ v
        return self.o_proj(mixed.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.d_model)
        self.attention = CausalSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model)
        self.fc_in = nn.Linear(config.d_model, config.mlp_hidden)
        self.fc_out = nn.Linear(config.mlp_hidden, config.d_model)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.attention(self.attention_norm(hidden))
        return hidden + self.fc_out(nn.functional.gelu(self.fc_in(self.mlp_norm(hidden))))


class TinyCausalLM(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.max_context, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.final_norm = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self._init_weights()

    def _init_weights(self) -> None:
        # Small normal weights: the random model starts close to uniform over what it may
        # emit, so sampled answers are at chance level before training.
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=self.config.init_std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        length = input_ids.shape[1]
        if length > self.config.max_context:
            raise ValueError(f"sequence of {length} tokens exceeds the tiny model's max context of {self.config.max_context}")
        positions = torch.arange(length, device=input_ids.device)
        hidden = self.token_embedding(input_ids) + self.position_embedding(positions)[None]
        for block in self.blocks:
            hidden = block(hidden)
        return self.lm_head(self.final_norm(hidden))
