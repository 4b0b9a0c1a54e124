"""The end-to-end loop bench/gpu/check.sh runs, exercised on CPU with the tiny model, and
the script's own guard when CUDA is absent."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from a3r_swarm.gpu_check.__main__ import main as gpu_check_main

CHECK_SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "gpu" / "check.sh"


def test_the_http_grpo_loop_runs_on_cpu(tiny_model, tmp_path):
    out = tmp_path / "summary.json"
    assert gpu_check_main(["run", "--model", tiny_model, "--task", "item-colour", "--device", "cpu", "--steps", "2",
                           "--tasks-per-step", "2", "--repeats", "3", "--max-tokens", "3", "--lr", "0.02",
                           "--rank", "16", "--alpha", "64", "--targets", "lm_head", "--work", str(tmp_path / "work"),
                           "--json", str(out), "--no-learning-check"]) == 0
    summary = json.loads(out.read_text())
    assert summary["device"] == "cpu" and summary["episodes_per_step"] == 6 and len(summary["reward_curve"]) == 2
    for record in summary["history"]:
        assert record["train_samples"] == 6 and record["train_tokens_per_s"] > 0 and record["rollout_tokens_per_s"] > 0
    assert (tmp_path / "work" / "adapters" / "step-2" / "adapter.pt").is_file()
    assert set(summary["learning_check"]) == {"passed", "message", "min_gain"}


def test_the_learning_check_fails_a_flat_reward_and_a_zero_gradient():
    from a3r_swarm.gpu_check.__main__ import learning_check

    passed, message = learning_check([0.0] * 5, [0.0] * 5, 0.05)
    assert not passed and "stayed at 0.000" in message and "zero gradient" in message
    passed, message = learning_check([0.2, 0.18, 0.21, 0.19, 0.2, 0.22], [0.5] * 6, 0.05)
    assert not passed and "did not improve" in message
    assert learning_check([0.2, 0.18, 0.3, 0.4, 0.6, 0.7], [0.5] * 6, 0.05)[0]


def run_check_script(tmp_path, *flags, timeout=1500):
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable)
    return subprocess.run(["bash", str(CHECK_SCRIPT), *flags], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.hf
@pytest.mark.slow
def test_check_script_on_cpu_fails_when_nothing_is_learned(tmp_path, qwen_model):
    # lr 0: the reward only wanders; the check must say so and exit non-zero. A small
    # configuration with a wide margin (+0.2) so chance cannot pass it.
    process = run_check_script(tmp_path, "--device", "cpu", "--steps", "6", "--lr", "0", "--tasks-per-step", "2",
                               "--max-tokens", "6", "--min-gain", "0.2")
    assert process.returncode == 3, process.stdout + process.stderr[-3000:]
    assert "learning check: FAILED: the reward did not improve" in process.stdout
    summary = json.loads((tmp_path / "gpu-check.json").read_text())
    assert summary["device"] == "cpu" and len(summary["reward_curve"]) == 6 and summary["mfu"] is None
    assert 0 < summary["reward_first"] < 0.5  # Qwen's tokenizer decodes words: ~16% of tokens are words
