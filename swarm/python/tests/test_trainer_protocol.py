"""The trainer as a real subprocess speaking a3r-trainer/1; every failure keeps it alive."""

import json
import subprocess
import sys

import pytest

from a3r_swarm.gpu_check.processes import TrainerProcess, child_env
from a3r_swarm.tiny.lora import read_adapter

from conftest import sample, write_batch

PROMPT = [1, 300, 301, 4, 2]


@pytest.fixture(scope="module")
def trainer():
    process = TrainerProcess(python=sys.executable)
    yield process
    assert process.close() == 0


def error_of(answer):
    assert answer["ok"] is False, answer
    return answer["error"]


def test_ready_line(trainer):
    assert trainer.ready["event"] == "ready" and trainer.ready["protocol"] == "a3r-trainer/1"
    assert trainer.ready["pid"] == trainer.process.pid


def test_errors_before_load(trainer, tmp_path):
    error = error_of(trainer.send_raw("{not json"))
    assert error["code"] == "BAD_REQUEST" and "not valid JSON" in error["message"]
    answer = trainer.send_raw(json.dumps({"id": 41, "op": "fly"}))
    assert answer["id"] == 41 and error_of(answer)["code"] == "BAD_REQUEST" and "op" in answer["error"]["message"]
    assert error_of(trainer.request("train", batch_file="/x.jsonl", step=1, output_dir=str(tmp_path)))["code"] == "NOT_LOADED"
    error = error_of(trainer.request("load", model="/nonexistent/model"))
    assert error["code"] == "BAD_REQUEST" and "model not found: /nonexistent/model" in error["message"]
    error = error_of(trainer.request("load", model="x", optimizer={"lr": "fast"}))
    assert error["code"] == "BAD_REQUEST" and "optimizer.lr" in error["message"]


def test_missing_transformers_is_a_typed_error(trainer, tmp_path):
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
        pytest.skip("transformers is installed here")
    except ImportError:
        pass
    (tmp_path / "config.json").write_text('{"model_type": "qwen2"}')
    error = error_of(trainer.request("load", model=str(tmp_path), device="cpu"))
    assert error["code"] == "MISSING_DEPENDENCY" and "pip install transformers peft" in error["message"]


def test_load(trainer, tiny_model):
    result = trainer.call("load", model=tiny_model, device="cpu", seed=0, lora={"rank": 4, "alpha": 8})
    assert result["model_kind"] == "tiny" and result["device"] == "cpu" and result["vocab_size"] == 1061
    assert 0 < result["trainable_parameters"] < result["parameters"]


def test_batch_errors_name_file_line_and_field(trainer, tmp_path):
    good = sample("t", "e1", PROMPT, [5, 4], 1.0)
    bad = dict(sample("t", "e2", PROMPT, [6, 4], 0.0), lossMask=[0, 1])
    path = write_batch(tmp_path / "bad.jsonl", [good, bad])
    error = error_of(trainer.request("train", batch_file=path, step=1, output_dir=str(tmp_path / "out")))
    assert error["code"] == "BAD_BATCH"
    assert path in error["message"] and "line 2" in error["message"] and "lossMask" in error["message"]
    path = write_batch(tmp_path / "nan.jsonl", [good, dict(good, episodeUuid="e3", reward=float("nan"))])
    error = error_of(trainer.request("train", batch_file=path, step=1, output_dir=str(tmp_path / "out")))
    assert error["code"] == "BAD_BATCH" and "line 2" in error["message"] and "reward" in error["message"]
    for field, value in (("temperature", 0), ("temperature", "hot"), ("top_p", 1.5)):
        path = write_batch(tmp_path / "sampling.jsonl", [good, dict(good, episodeUuid="e4", **{field: value})])
        error = error_of(trainer.request("train", batch_file=path, step=1, output_dir=str(tmp_path / "out")))
        assert error["code"] == "BAD_BATCH" and "line 2" in error["message"] and f"{field}:" in error["message"]


def test_token_out_of_vocab(trainer, tmp_path):
    path = write_batch(tmp_path / "oov.jsonl", [sample("t", "e1", PROMPT, [5, 4], 1.0),
                                                sample("t", "e2", [1, 151643, 2], [6, 4], 0.0)])
    error = error_of(trainer.request("train", batch_file=path, step=1, output_dir=str(tmp_path / "out")))
    assert error["code"] == "TOKEN_OUT_OF_VOCAB"
    for part in (path, "line 2", "151643", "1061"):
        assert part in error["message"]


def test_nan_loss_leaves_the_weights_unchanged(trainer, tmp_path):
    good = write_batch(tmp_path / "good.jsonl", [sample("t", "e1", PROMPT, [5, 4], 1.0), sample("t", "e2", PROMPT, [6, 4], 0.0)])
    result = trainer.call("train", batch_file=good, step=1, output_dir=str(tmp_path / "step-1"))
    assert result["step"] == 1 and all(isinstance(v, (int, float)) for v in result["metrics"].values())
    # A behaviour log-prob of -1e30 makes the ratio overflow to inf on a negative advantage.
    poisoned = write_batch(tmp_path / "poisoned.jsonl", [sample("t", "e1", PROMPT, [5, 4], 1.0, [-0.5, -0.5]),
                                                         sample("t", "e2", PROMPT, [6, 4], 0.0, [-1e30, -1e30])])
    error = error_of(trainer.request("train", batch_file=poisoned, step=2, output_dir=str(tmp_path / "step-2")))
    assert error["code"] == "NAN_LOSS" and error["retryable"] is False
    assert not (tmp_path / "step-2" / "adapter.pt").exists()
    saved = trainer.call("save", dir=str(tmp_path / "ckpt"))
    assert saved["step"] == 1
    _, after = read_adapter(tmp_path / "ckpt" / "adapter")
    _, before = read_adapter(tmp_path / "step-1")
    assert after.keys() == before.keys() and all((after[k] == before[k]).all() for k in after)
    bad = trainer.request("restore", path=str(tmp_path / "nothing-here"))
    assert error_of(bad)["code"] == "CHECKPOINT_INVALID"
    assert trainer.call("restore", path=str(tmp_path / "ckpt"))["step"] == 1


def test_shutdown_answers_then_exits(trainer):
    assert trainer.request("shutdown") == {"id": trainer._next_id, "ok": True, "result": {"ok": True}}
    assert trainer.process.wait(timeout=120) == 0  # generous: a loaded machine, torch 2.x exiting


def test_eof_exits_zero():
    process = subprocess.run([sys.executable, "-m", "a3r_swarm.trainer"], input="", capture_output=True, text=True,
                             env=child_env(), timeout=60)
    assert process.returncode == 0
    assert json.loads(process.stdout.strip())["event"] == "ready"
