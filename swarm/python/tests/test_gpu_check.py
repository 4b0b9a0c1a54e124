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
                           "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["device"] == "cpu" and summary["episodes_per_step"] == 6 and len(summary["reward_curve"]) == 2
    for record in summary["history"]:
        assert record["train_samples"] == 6 and record["train_tokens_per_s"] > 0 and record["rollout_tokens_per_s"] > 0
    assert (tmp_path / "work" / "adapters" / "step-2" / "adapter.pt").is_file()


def test_the_random_qwen2_model_builds(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    from a3r_swarm.gpu_check.qwen_model import build_random_qwen2
    from a3r_swarm.models import load_policy

    build_random_qwen2(tmp_path / "qwen", vocab_size=512, hidden=64, layers=1, heads=4, kv_heads=2, intermediate=128)
    policy = load_policy(str(tmp_path / "qwen"), "cpu")
    ids = policy.encode_chat([{"role": "user", "content": "say w1 w2"}])
    assert policy.kind == "transformers" and ids[-1] == policy.tokenizer.convert_tokens_to_ids("assistant")


def test_check_script_fails_fast_without_cuda(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    env = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable)
    process = subprocess.run(["bash", str(CHECK_SCRIPT)], capture_output=True, text=True, env=env, timeout=60)
    assert process.returncode != 0
    assert "CUDA is not available" in process.stderr
