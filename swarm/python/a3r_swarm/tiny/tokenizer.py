"""Word-level tokenizer for tiny models; needs no downloaded files.

Ids mirror the TypeScript embedded tokenizer (swarm/engines/embedded/tokenizer.ts):
0..3 are the role tokens (system, user, assistant, tool), 4 is end-of-turn, then one id per
vocabulary word. Other words get one of `unknown_buckets` stable hash ids above the
vocabulary (FNV-1a over UTF-16 code units, as the TS side hashes), so prompts keep their
information while the model never emits them. A message renders as role + words + end and a
conversation is the concatenation of its messages, so a conversation extending another
shares its token prefix.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROLE_TOKEN_IDS = {"system": 0, "user": 1, "assistant": 2, "tool": 3}
END_TOKEN_ID = 4
FIRST_WORD_ID = 5
TOKENIZER_FORMAT = "a3r-word-tokenizer/1"

# Runs of letters/digits, or one punctuation mark (TS: /[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/u).
# Python's re has no \p{..}; [^\W_] is "word character but not underscore" = letters/digits.
_WORD_PATTERN = re.compile(r"[^\W_]+|[^\s\w]|_")


def split_words(text: str) -> list[str]:
    return _WORD_PATTERN.findall(text.lower())


def fnv1a_utf16(text: str) -> int:
    """FNV-1a 32 bit over UTF-16 code units: stable across processes (unlike hash())
    and equal to the TS tokenizer's hashString for the same text."""
    value = 0x811C9DC5
    data = text.encode("utf-16-le")
    for index in range(0, len(data), 2):
        value ^= data[index] | (data[index + 1] << 8)
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


class WordTokenizer:
    def __init__(self, vocabulary: list[str] | tuple[str, ...], unknown_buckets: int = 1024):
        if unknown_buckets < 1:
            raise ValueError("unknown_buckets must be at least 1")
        self.word_ids: dict[str, int] = {}
        for word in vocabulary:
            if split_words(word) != [word]:
                raise ValueError(f'vocabulary word "{word}" must be one lower-case word or one punctuation mark')
            self.word_ids.setdefault(word, FIRST_WORD_ID + len(self.word_ids))
        self.words = list(self.word_ids)
        self.unknown_buckets = unknown_buckets
        self.unknown_base = FIRST_WORD_ID + len(self.words)
        self.vocab_size = self.unknown_base + unknown_buckets
        # The ids the model may emit: end-of-turn, then every vocabulary word.
        self.emittable_ids = [END_TOKEN_ID] + [FIRST_WORD_ID + i for i in range(len(self.words))]

    def encode_text(self, text: str) -> list[int]:
        ids = []
        for word in split_words(text):
            known = self.word_ids.get(word)
            ids.append(known if known is not None else self.unknown_base + fnv1a_utf16(word) % self.unknown_buckets)
        return ids

    def encode_chat(self, messages: list[dict], add_generation_prompt: bool = False) -> list[int]:
        ids: list[int] = []
        for message in messages:
            role = message["role"]
            if role not in ROLE_TOKEN_IDS:
                raise ValueError(f"unknown role {role!r}")
            ids.append(ROLE_TOKEN_IDS[role])
            ids.extend(self.encode_text(message.get("content") or ""))
            ids.append(END_TOKEN_ID)
        if add_generation_prompt:
            ids.append(ROLE_TOKEN_IDS["assistant"])
        return ids

    def decode(self, ids: list[int]) -> str:
        """Words joined by single spaces; role and end tokens dropped, hash ids as <unk>."""
        parts = []
        for token_id in ids:
            if token_id <= END_TOKEN_ID:
                continue
            index = token_id - FIRST_WORD_ID
            parts.append(self.words[index] if index < len(self.words) else "<unk>")
        return " ".join(parts)

    def to_json(self) -> dict:
        return {"format": TOKENIZER_FORMAT, "vocab": self.words, "unknown_buckets": self.unknown_buckets,
                "role_token_ids": ROLE_TOKEN_IDS, "end_token_id": END_TOKEN_ID, "first_word_id": FIRST_WORD_ID}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "WordTokenizer":
        data = json.loads(Path(path).read_text())
        if data.get("format") != TOKENIZER_FORMAT:
            raise ValueError(f"{path}: not an {TOKENIZER_FORMAT} tokenizer")
        return cls(data["vocab"], data["unknown_buckets"])
