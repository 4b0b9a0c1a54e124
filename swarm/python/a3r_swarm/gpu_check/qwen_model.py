"""A random-weight Qwen2-architecture model with a word-level tokenizer, built locally:
nothing is downloaded. Needs transformers and tokenizers (a transformers dependency)."""

from __future__ import annotations

from pathlib import Path

from ..errors import import_transformers

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"]
ROLES = ["system", "user", "assistant", "tool", "say"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|> {{ message['role'] }} {{ message['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


def word_vocabulary(vocab_size: int) -> list[str]:
    return [f"w{index}" for index in range(vocab_size - len(SPECIALS) - len(ROLES))]


def target_words(words: list[str]) -> set[str]:
    return set(words[: len(words) // 8])


def build_random_qwen2(out: str | Path, *, vocab_size: int = 32000, hidden: int = 512, layers: int = 4,
                       heads: int = 8, kv_heads: int = 2, intermediate: int = 1408, seed: int = 0) -> Path:
    transformers, _ = import_transformers()
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokens = SPECIALS + ROLES + word_vocabulary(vocab_size)
    vocab = {token: index for index, token in enumerate(tokens)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>",
                                                     pad_token="<|endoftext|>", unk_token="<unk>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tokenizer.chat_template = CHAT_TEMPLATE
    config = transformers.Qwen2Config(
        vocab_size=len(tokens), hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=2048,
        tie_word_embeddings=False, eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|endoftext|>"],
        bos_token_id=None)
    torch.manual_seed(seed)
    model = transformers.Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = vocab["<|im_end|>"]
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
