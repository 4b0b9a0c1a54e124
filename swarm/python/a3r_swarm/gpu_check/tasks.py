"""Tasks for the end-to-end loop: prompts plus a reward computed from the answer text."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Callable

ITEM_COLOURS = {
    "apple": "red", "cherry": "red", "grass": "green", "leaf": "green", "sky": "blue", "ocean": "blue",
    "banana": "yellow", "lemon": "yellow", "snow": "white", "milk": "white", "coal": "black", "night": "black",
}


@dataclass
class Task:
    task_id: str
    messages: list[dict]
    score: Callable[[str, list[int]], float]  # (answer text, completion token ids) -> reward


def first_word(text: str) -> str:
    match = re.search(r"[^\W_]+", text.lower())
    return match.group(0) if match else ""


def item_colour_task(item: str, system_prompt: bool = True) -> Task:
    """The TS example task (examples/tasks/item-color): reward 1 when the first word is the colour."""
    messages = [{"role": "system", "content": "You name colours. Answer with one word."}] if system_prompt else []
    messages.append({"role": "user", "content": f"What colour is the {item}?"})
    colour = ITEM_COLOURS[item]
    return Task(f"item-color-{item}", messages, lambda text, ids: 1.0 if first_word(text) == colour else 0.0)


def item_colour_tasks(rng: random.Random, count: int) -> list[Task]:
    return [item_colour_task(rng.choice(sorted(ITEM_COLOURS))) for _ in range(count)]


# A word as Qwen's tokenizer spells one: a leading space and two or more lower-case letters.
# About 16% of its 151,669 tokens decode to one, so a random model scores ~0.16 at once
# (GRPO has signal from the first step) and can learn to say more of them.
WORD_TOKEN = re.compile(r" [a-z]{2,}")
CUES = ["apple", "river", "stone", "cloud", "music", "garden", "window", "silver", "forest", "candle", "bridge", "winter"]


def word_token_tasks(rng: random.Random, count: int, decode_one: Callable[[int], str],
                     stop_ids: frozenset[int]) -> list[Task]:
    """For a random model with a real tokenizer: reward = fraction of the completion's
    tokens (end tokens left out) that decode to a word (WORD_TOKEN). Decoding each token
    goes through the served model's tokenizer, so a tokenizer that decodes to nothing
    scores 0 on every step and the learning check fails."""

    def score(text: str, ids: list[int]) -> float:
        body = [token for token in ids if token not in stop_ids]
        return sum(WORD_TOKEN.fullmatch(decode_one(token)) is not None for token in body) / len(body) if body else 0.0

    tasks = []
    for _ in range(count):
        cue = " ".join(rng.sample(CUES, 3))
        tasks.append(Task(f"words-{cue.replace(' ', '-')}", [{"role": "user", "content": f"Write some words like {cue}."}],
                          score))
    return tasks
