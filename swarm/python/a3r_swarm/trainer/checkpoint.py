"""Trainer checkpoints: the adapter (servable as is) plus everything needed to continue
bit for bit: exact trainable tensors, AdamW moments, the step and the RNG states.

Layout: DIR/checkpoint.json, DIR/trainer_state.pt, DIR/adapter/. Written into a sibling
temp dir and renamed into place, so DIR is either the old checkpoint or the new one.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ..errors import CheckpointInvalid

if TYPE_CHECKING:
    from .session import TrainerSession

CHECKPOINT_FORMAT = "a3r-trainer-checkpoint/1"


def save_checkpoint(session: "TrainerSession", directory: str) -> None:
    policy, settings, optimizer = session.require_loaded()
    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    temp.mkdir()
    try:
        policy.save_adapter(temp / "adapter")
        rng = {"torch": torch.get_rng_state(), "python": random.getstate(),
               "cuda": torch.cuda.get_rng_state_all() if policy.device.type == "cuda" else None}
        trainable = {name: p.detach().cpu().clone() for name, p in policy.trainable_named_parameters()}
        torch.save({"step": session.step, "trainable": trainable, "optimizer": optimizer.state_dict(), "rng": rng},
                   temp / "trainer_state.pt")
        manifest = {"format": CHECKPOINT_FORMAT, "step": session.step, "model": settings.model,
                    "model_kind": policy.kind, "adapter": "adapter"}
        (temp / "checkpoint.json").write_text(json.dumps(manifest, indent=1) + "\n")
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        if target.exists():
            target.rename(old)
        temp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def restore_checkpoint(session: "TrainerSession", directory: str) -> str:
    """Check everything before changing anything: a rejected checkpoint leaves the session
    as it was. Returns the checkpoint's adapter path."""
    policy, settings, optimizer = session.require_loaded()
    path = Path(directory)
    try:
        manifest = json.loads((path / "checkpoint.json").read_text())
        state = torch.load(path / "trainer_state.pt", map_location="cpu")
    except (OSError, ValueError, RuntimeError, EOFError) as error:
        raise CheckpointInvalid(f"cannot read checkpoint {path}: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointInvalid(f"{path}/checkpoint.json: format is not {CHECKPOINT_FORMAT}")
    if manifest.get("model_kind") != policy.kind:
        raise CheckpointInvalid(f"{path}: checkpoint of a {manifest.get('model_kind')} model, loaded model is {policy.kind}")
    if not isinstance(state, dict) or not {"step", "trainable", "optimizer", "rng"} <= set(state):
        raise CheckpointInvalid(f"{path}/trainer_state.pt: missing fields")
    current = dict(policy.trainable_named_parameters())
    saved = state["trainable"]
    if set(saved) != set(current):
        differ = sorted(set(saved) ^ set(current))[:3]
        raise CheckpointInvalid(f"{path}: trainable parameters differ from the loaded model's (e.g. {differ}); "
                                "load with the same model and lora settings")
    for name, tensor in saved.items():
        if tuple(tensor.shape) != tuple(current[name].shape):
            raise CheckpointInvalid(f"{path}: {name} has shape {tuple(tensor.shape)}, model has {tuple(current[name].shape)}")
    try:
        previous_optimizer = optimizer.state_dict()
        optimizer.load_state_dict(state["optimizer"])
    except (ValueError, KeyError, RuntimeError) as error:
        raise CheckpointInvalid(f"{path}: optimizer state does not fit: {error}") from error
    # The saved state carries its own lr etc.; the current load request's settings win.
    opt = settings.optimizer
    for group in optimizer.param_groups:
        group["lr"], group["weight_decay"] = opt.lr, opt.weight_decay
    try:
        with torch.no_grad():
            for name, tensor in saved.items():
                current[name].copy_(tensor.to(current[name].device, current[name].dtype))
    except RuntimeError as error:
        optimizer.load_state_dict(previous_optimizer)
        raise CheckpointInvalid(f"{path}: {error}") from error
    rng = state["rng"]
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    if rng.get("cuda") is not None and policy.device.type == "cuda":
        torch.cuda.set_rng_state_all(rng["cuda"])
    session.step = int(state["step"])
    session.adapter_path = str(path / "adapter")
    return session.adapter_path
