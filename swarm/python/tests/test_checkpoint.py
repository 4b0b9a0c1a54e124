"""save/restore: continuing after a restore gives exactly the step that never stopping gives."""

import json

import pytest
import torch

from a3r_swarm.trainer import TrainerSession
from a3r_swarm.errors import CheckpointInvalid

from conftest import sample, write_batch

LOAD = {"seed": 7, "device": "cpu", "lora": {"rank": 4, "alpha": 8, "dropout": 0.1},
        "optimizer": {"lr": 0.01, "kl_coef": 0.05, "weight_decay": 0.01}}


def batches(tmp_path):
    prompt = [1, 300, 301, 4, 2]
    out = []
    for step in range(1, 4):
        samples = [sample(f"t{step}", f"s{step}e{i}", prompt, [5 + (i + step) % 6, 4], float(i % 2)) for i in range(4)]
        out.append(write_batch(tmp_path / f"step-{step}.jsonl", samples))
    return out


def trainable(session):
    return {name: p.detach().clone() for name, p in session.policy.trainable_named_parameters()}


def test_restore_continues_exactly(tiny_model, tmp_path):
    files = batches(tmp_path)
    first = TrainerSession()
    first.load({"model": tiny_model, **LOAD})
    for step in (1, 2):
        first.train({"batch_file": files[step - 1], "step": step, "output_dir": str(tmp_path / f"a{step}")})
    assert first.save({"dir": str(tmp_path / "ckpt")}) == {"path": str(tmp_path / "ckpt"), "step": 2}
    reference = first.train({"batch_file": files[2], "step": 3, "output_dir": str(tmp_path / "a3")})
    weights = trainable(first)

    second = TrainerSession()
    second.load({"model": tiny_model, **LOAD})
    restored = second.restore({"path": str(tmp_path / "ckpt")})
    assert restored == {"step": 2, "adapter_path": str(tmp_path / "ckpt" / "adapter")}
    again = second.train({"batch_file": files[2], "step": 3, "output_dir": str(tmp_path / "b3")})
    for key in ("loss", "kl", "grad_norm", "clip_fraction", "entropy", "reward_mean"):
        assert again["metrics"][key] == pytest.approx(reference["metrics"][key], abs=1e-6), key
    for name, tensor in trainable(second).items():
        assert torch.allclose(tensor, weights[name], atol=1e-6), name
    assert json.loads((tmp_path / "ckpt" / "checkpoint.json").read_text())["step"] == 2
    assert not list(tmp_path.glob(".ckpt.*")), "temp dirs must not be left behind"


def test_an_invalid_checkpoint_is_rejected_and_changes_nothing(tiny_model, tmp_path):
    session = TrainerSession()
    session.load({"model": tiny_model, **LOAD})
    before = trainable(session)
    with pytest.raises(CheckpointInvalid, match="cannot read checkpoint"):
        session.restore({"path": str(tmp_path / "missing")})
    other = TrainerSession()
    other.load({"model": tiny_model, **LOAD, "lora": {"rank": 2}})
    other.save({"dir": str(tmp_path / "rank2")})
    with pytest.raises(CheckpointInvalid, match="shape"):
        session.restore({"path": str(tmp_path / "rank2")})
    for name, tensor in trainable(session).items():
        assert torch.equal(tensor, before[name])
