"""examples/tasks/count-on: the task's scoring, and its Python client training the
embedded engine through a real `a3r swarm serve` for a few steps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from a3r_swarm.client import SwarmClient, SwarmFinishedError

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "count-on"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"count_on_example_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


count_on = load("count_on")
example_client = load("client")

STEPS = 3
CONFIG = f"""
model: {{ kind: embedded, seed: 1 }}
train_batch_size: 2
num_repeat: 2
swarm_mode_sample_collection_method: rollout_until_finish_enough_tasks
save_freq: 0
experiment_dir: ./experiment
compare_level: token
sampling: {{ temperature: 1, top_p: 1, max_tokens: 3 }}
max_steps: {STEPS}
"""


def test_each_turn_is_judged_from_the_number_said_before_it():
    task = count_on.CountOnTask("count-on-two", "two")
    assert count_on.score(task, ["three", "four"]).reward == 1
    # Wrong first answer, but the second counts on from it: credited.
    assert count_on.score(task, ["four", "Five!"]).correct == (0, 1)
    assert count_on.score(task, ["banana", "three"]).correct == (0, 1)
    assert count_on.score(task, ["banana", "four"]).correct == (0, 0)
    assert count_on.score(task, ["three"]).correct == (1, 0)


def test_the_turns_extend_one_conversation_and_stop_when_the_server_says_so():
    seen: list[list[dict[str, str]]] = []

    def ask(messages, max_tokens):
        seen.append(messages)
        return ["two", "three"][len(seen) - 1]

    outcome = count_on.play_episode(count_on.sample_task(0), ask)
    assert outcome.is_success and outcome.reward == 1
    assert seen[1][: len(seen[0])] == seen[0]
    assert seen[1][len(seen[0])] == {"role": "assistant", "content": "two"}
    seen.clear()
    assert count_on.play_episode(count_on.sample_task(0), ask, may_continue=lambda: False).correct == (1, 0)
    assert len(seen) == 1


def test_the_python_client_trains_the_embedded_engine_until_max_steps(swarm_server):
    server = swarm_server(CONFIG)
    summary = example_client.run(server.url, episodes=200, concurrency=4, num_repeat=2)
    assert summary.finished, summary.errors
    assert summary.aborted == 0, summary.errors

    client = SwarmClient(server.url)
    assert client.status()["global_step"] == STEPS
    steps = client.metrics()
    assert [step["step"] for step in steps] == list(range(1, STEPS + 1))
    for step in steps:
        assert step["episodes"] == 4
        # Both turns of every episode merged into one sample.
        assert step["samples"] == step["episodes"]
        assert 0 < step["merge_ratio"] < 1
        assert "log/first_turn_right" in step
    with pytest.raises(SwarmFinishedError):
        client.begin_episode()
