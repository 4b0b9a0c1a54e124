"""Tiny CPU model: word tokenizer, small causal transformer, own LoRA, model dirs."""

from .store import MODEL_FORMAT, init_model_dir, is_tiny_model_dir, load_model_dir
from .tokenizer import END_TOKEN_ID, ROLE_TOKEN_IDS, WordTokenizer

__all__ = ["MODEL_FORMAT", "init_model_dir", "is_tiny_model_dir", "load_model_dir", "END_TOKEN_ID",
           "ROLE_TOKEN_IDS", "WordTokenizer"]
