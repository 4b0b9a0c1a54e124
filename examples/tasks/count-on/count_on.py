"""The count-on task: a multi-turn task for the swarm, written in Python.

The agent counts up: it is told a number word and says the next one, then is told to go
on, for two turns. Each turn appends to the conversation so far, so the episode's calls
extend each other and the server merges them into one training sample. The second turn
continues from what the agent said (its own earlier message is the only place the count
lives), so it is right when it names the number after the last number said before it (the
agent's previous answer, or the start when that answer was not a number word). Reward:
the fraction of turns right. Starts: one, two, three (3 task ids).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

NUMBERS = ("one", "two", "three", "four", "five")
STARTS = NUMBERS[:3]
TURNS = 2

# `ask(messages, max_tokens)` returns the assistant's answer text: the one policy call.
Ask = Callable[[list[dict[str, str]], int], str]


@dataclass(frozen=True)
class CountOnTask:
    task_id: str
    start: str


@dataclass(frozen=True)
class Outcome:
    reward: float
    is_success: bool
    correct: tuple[int, ...]


def sample_task(seed: int) -> CountOnTask:
    start = STARTS[seed % len(STARTS)]
    return CountOnTask(task_id=f"count-on-{start}", start=start)


def first_word(answer: str) -> str:
    match = re.search(r"[a-z0-9]+", answer.lower())
    return match.group(0) if match else ""


def next_number(word: str) -> str | None:
    index = NUMBERS.index(word) if word in NUMBERS else -1
    return NUMBERS[index + 1] if 0 <= index < len(NUMBERS) - 1 else None


def score(task: CountOnTask, answers: list[str]) -> Outcome:
    """Each turn is judged from the last number said before it: the start, then the agent's own.
    A turn not played (the server stopped the episode) counts as wrong."""
    correct: list[int] = []
    previous = task.start
    for turn in range(TURNS):
        word = first_word(answers[turn]) if turn < len(answers) else ""
        correct.append(1 if word and word == next_number(previous) else 0)
        if word in NUMBERS:
            previous = word
    return Outcome(reward=sum(correct) / TURNS, is_success=all(correct), correct=tuple(correct))


def play_episode(task: CountOnTask, ask: Ask, may_continue: Callable[[], bool] = lambda: True) -> Outcome:
    messages = [
        {"role": "system", "content": "We count up together. Answer with one number word."},
        {"role": "user", "content": f"I say {task.start}. Say the next number."},
    ]
    answers: list[str] = []
    for turn in range(TURNS):
        if turn > 0:
            if not may_continue():  # the server reclaimed the episode: stop spending calls on it
                break
            messages = [*messages, {"role": "assistant", "content": answers[-1]}, {"role": "user", "content": "Go on."}]
        answers.append(ask(messages, 3))
    return score(task, answers)
