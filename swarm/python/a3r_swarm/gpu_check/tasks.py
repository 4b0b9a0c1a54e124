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
    score: Callable[[str], float]


def first_word(text: str) -> str:
    match = re.search(r"[^\W_]+", text.lower())
    return match.group(0) if match else ""


def item_colour_task(item: str, system_prompt: bool = True) -> Task:
    """The TS example task (examples/tasks/item-color): reward 1 when the first word is the colour."""
    messages = [{"role": "system", "content": "You name colours. Answer with one word."}] if system_prompt else []
    messages.append({"role": "user", "content": f"What colour is the {item}?"})
    colour = ITEM_COLOURS[item]
    return Task(f"item-color-{item}", messages, lambda text: 1.0 if first_word(text) == colour else 0.0)


def item_colour_tasks(rng: random.Random, count: int) -> list[Task]:
    return [item_colour_task(rng.choice(sorted(ITEM_COLOURS))) for _ in range(count)]


def target_word_tasks(rng: random.Random, count: int, vocabulary: list[str], targets: set[str]) -> list[Task]:
    """For a random model over a large word vocabulary: reward = fraction of the answer's
    words that lie in `targets` (an eighth of the vocabulary, so chance is ~1/8 and GRPO
    gets signal from the first step; the policy learns to say target words)."""
    tasks = []
    for _ in range(count):
        cue = " ".join(rng.choice(vocabulary) for _ in range(4))
        messages = [{"role": "user", "content": f"say {cue}"}]

        def score(text: str) -> float:
            words = text.split()
            return sum(word in targets for word in words) / len(words) if words else 0.0

        tasks.append(Task(f"target-{cue.replace(' ', '-')}", messages, score))
    return tasks
