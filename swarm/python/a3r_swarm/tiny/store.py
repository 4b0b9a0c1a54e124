"""Tiny model directories: config.json (format a3r-tiny/1), weights.pt, tokenizer.json.

Weights are a deterministic function of the seed and dims, so `init` twice with the same
arguments writes the same model."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .model import TinyCausalLM, TinyConfig
from .tokenizer import WordTokenizer
from .vocabulary import DEFAULT_VOCABULARY

MODEL_FORMAT = "a3r-tiny/1"


def is_tiny_model_dir(path: str | Path) -> bool:
    config_path = Path(path) / "config.json"
    if not config_path.is_file():
        return False
    try:
        return json.loads(config_path.read_text()).get("format") == MODEL_FORMAT
    except (OSError, ValueError):
        return False


def init_model_dir(out: str | Path, *, seed: int = 0, d_model: int = 64, layers: int = 2, heads: int = 4,
                   words: list[str] | None = None, unknown_buckets: int = 1024, max_context: int = 256,
                   attention_windows: list[int] | None = None) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = WordTokenizer(list(words) if words else list(DEFAULT_VOCABULARY), unknown_buckets)
    config = TinyConfig(vocab_size=tokenizer.vocab_size, d_model=d_model, layers=layers, heads=heads,
                        mlp_hidden=4 * d_model, max_context=max_context,
                        output_ids=list(tokenizer.emittable_ids))
    if attention_windows is not None:
        config.attention_windows = list(attention_windows)
    elif heads != len(config.attention_windows):
        config.attention_windows = [4] * heads
    # A private generator state: initialising must neither depend on nor disturb the
    # caller's RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyCausalLM(config)
    torch.save(model.state_dict(), out / "weights.pt")
    tokenizer.save(out / "tokenizer.json")
    manifest = {"format": MODEL_FORMAT, "vocab": tokenizer.words, "unknown_buckets": unknown_buckets,
                "dims": config.to_json(), "seed": seed}
    (out / "config.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return out


def load_model_dir(path: str | Path) -> tuple[TinyCausalLM, WordTokenizer, dict]:
    path = Path(path)
    manifest = json.loads((path / "config.json").read_text())
    if manifest.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path}: not an {MODEL_FORMAT} model")
    tokenizer = WordTokenizer.load(path / "tokenizer.json")
    config = TinyConfig(**manifest["dims"])
    if config.vocab_size != tokenizer.vocab_size or (config.output_ids and config.output_ids != tokenizer.emittable_ids):
        raise ValueError(f"{path}: config.json does not match tokenizer.json (vocab size or emittable ids)")
    model = TinyCausalLM(config)
    model.load_state_dict(torch.load(path / "weights.pt", map_location="cpu"))
    return model, tokenizer, manifest
