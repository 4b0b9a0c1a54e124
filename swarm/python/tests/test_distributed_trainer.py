"""The trainer as a 2-rank torchrun group (gloo, CPU) against the single-process trainer.

One step on a fixed batch must give the same adapter weights: the ranks' shard gradients,
each divided by the whole batch's trained-token count, sum (all_reduce) to the
single-process gradient. Float32 sums in another order differ in the last bits, and
AdamW's first step (g / (|g| + eps)) magnifies that for gradients near eps (measured: one
of 256 weights off by 1.4e-6), so the weights are compared to atol 1e-5 / rtol 1e-4: a
thousandth of the step's own size (lr 0.01), which a missing or doubled shard exceeds. Starting the
group takes seconds: slow tier.
"""

import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

import pytest
import torch

from a3r_swarm.gpu_check.processes import TrainerProcess, _drain, child_env
from a3r_swarm.tiny.lora import read_adapter
from a3r_swarm.trainer.batch import Sample
from a3r_swarm.trainer.distributed import agreed_answer, shard_by_tokens

from conftest import sample, write_batch

pytestmark = pytest.mark.slow

PROMPT = [1, 300, 301, 4, 2]


class TrainerGroup(TrainerProcess):
    """`python -m torch.distributed.run --nproc_per_node N -m a3r_swarm.trainer`, rank 0 speaking the protocol."""

    def __init__(self, nprocs: int, env_extra: dict[str, str] | None = None):
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nprocs}", "-m",
                "a3r_swarm.trainer"]
        env = child_env()
        env["OMP_NUM_THREADS"] = "1"
        env.update(env_extra or {})
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
        self.stderr_tail = deque(maxlen=50)
        threading.Thread(target=_drain, args=(self.process.stderr, self.stderr_tail, False), daemon=True).start()
        self.ready = self._read()
        self._next_id = 0


def batch_samples():
    # Two groups with different rewards and lengths, so the shards differ in size and content.
    return [
        sample("a", "e1", PROMPT, [5, 6, 7, 4], 1.0),
        sample("a", "e2", PROMPT, [8, 4], 0.0),
        sample("a", "e3", PROMPT, [9, 10, 11, 12, 13, 4], 0.5),
        sample("b", "e4", PROMPT, [14, 4], 1.0),
        sample("b", "e5", PROMPT, [15, 16, 17, 4], 0.0),
        sample("b", "e6", PROMPT, [18, 19, 4], 0.25),
        sample("b", "e7", PROMPT, [20, 21, 22, 23, 24, 25, 26, 4], 0.75),
    ]


LOAD = {"device": "cpu", "seed": 0, "lora": {"rank": 4, "alpha": 8},
        "optimizer": {"lr": 0.01, "clip_low": 0.2, "clip_high": 0.2, "max_grad_norm": 0},
        "micro_batch_tokens": 24, "keep_adapters": 0}


def one_step(trainer, tiny_model, batch, output_dir):
    """Loads, takes the compared step, then times a second step (the first pays for lazy set-up)."""
    loaded = trainer.call("load", model=tiny_model, **LOAD)
    result = trainer.call("train", batch_file=batch, step=1, output_dir=str(output_dir))
    times = []
    for step in (2, 3, 4):
        started = time.perf_counter()
        timed = trainer.call("train", batch_file=batch, step=step, output_dir=f"{output_dir}-step{step}")
        times.append((timed["metrics"]["step_seconds"], time.perf_counter() - started))
    return loaded, result, min(times)


def test_shards_balance_tokens_and_cover_the_batch_once():
    samples = [Sample(line, "t", f"e{line}", [0] * length, [1] * length, [None] * length, 0.0)
               for line, length in enumerate([9, 3, 7, 7, 2, 5], start=1)]
    shards = shard_by_tokens(samples, 2)
    assert sorted(s.line for shard in shards for s in shard) == [1, 2, 3, 4, 5, 6]
    assert [sum(len(s.token_ids) for s in shard) for shard in shards] == [17, 16]
    assert shard_by_tokens(samples[:1], 3)[1:] == [[], []]


def test_two_ranks_take_the_same_step_as_one_process(tiny_model, tmp_path, monkeypatch):
    # One thread per process on both sides (torchrun sets it for its ranks): the timing
    # compares 1 against 2 processes, not thread oversubscription on a shared machine.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    batch = write_batch(tmp_path / "batch.jsonl", batch_samples())
    single = TrainerProcess(python=sys.executable)
    try:
        _, single_result, single_seconds = one_step(single, tiny_model, batch, tmp_path / "single")
    finally:
        assert single.close() == 0
    group = TrainerGroup(2)
    try:
        assert group.ready["world_size"] == 2
        loaded, group_result, group_seconds = one_step(group, tiny_model, batch, tmp_path / "group")
        assert (loaded["world_size"], loaded["strategy"]) == (2, "ddp")
        # A checkpoint is written once, by rank 0, and every rank restores from it.
        saved = group.call("save", dir=str(tmp_path / "checkpoint"))
        assert saved["step"] == 4 and (tmp_path / "checkpoint").is_dir()
        assert group.call("restore", path=str(tmp_path / "checkpoint"))["step"] == 4
    finally:
        assert group.close() == 0, "".join(group.stderr_tail)
    _, single_weights = read_adapter(tmp_path / "single")
    _, group_weights = read_adapter(tmp_path / "group")
    assert single_weights.keys() == group_weights.keys()
    moved = max(float((single_weights[name]).abs().max()) for name in single_weights)
    assert moved > 1e-4, "the step moved no weight: the comparison would prove nothing"
    for name, weight in single_weights.items():
        torch.testing.assert_close(group_weights[name], weight, atol=1e-5, rtol=1e-4, msg=lambda m: f"{name}: {m}")
    for key in ("loss", "trained_tokens", "tokens", "samples", "reward_mean"):
        assert group_result["metrics"][key] == pytest.approx(single_result["metrics"][key], rel=1e-5, abs=1e-7), key
    print(f"\nfastest of steps 2-4 on a {len(batch_samples())}-sample batch (tiny model, CPU): 1 process "
          f"{single_seconds[0]:.3f} s in the trainer ({single_seconds[1]:.3f} s round trip), "
          f"2 gloo ranks {group_seconds[0]:.3f} s ({group_seconds[1]:.3f} s round trip)")


def test_a_killed_rank_ends_the_group_instead_of_hanging_it(tiny_model, tmp_path):
    """The engine restarts a dead trainer from its checkpoint; a group with a dead rank
    must therefore exit (rank 0's collective fails, torchrun stops the rest), never wait."""
    import os
    import signal

    batch = write_batch(tmp_path / "batch.jsonl", batch_samples())
    group = TrainerGroup(2)
    try:
        group.call("load", model=tiny_model, **LOAD)
        group.call("train", batch_file=batch, step=1, output_dir=str(tmp_path / "step-1"))
        ranks = subprocess.run(["pgrep", "-P", str(group.process.pid)], capture_output=True, text=True).stdout.split()
        rank_one = [pid for pid in ranks if b"RANK=1" in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")]
        assert len(rank_one) == 1, ranks
        os.kill(int(rank_one[0]), signal.SIGKILL)
        # Answered with RANK_LOST, or (here, as rank 0 waits in its broadcast) the group is gone.
        with pytest.raises((RuntimeError, BrokenPipeError)):
            group.request("train", batch_file=batch, step=2, output_dir=str(tmp_path / "step-2"))
        assert group.process.wait(timeout=120) != 0
    finally:
        if group.process.poll() is None:
            group.process.kill()


def test_ranks_that_answer_alike_give_rank_0s_answer_and_a_split_ends_the_group():
    ok = {"id": 3, "ok": True, "result": {"step": 1}}
    failed = {"id": 3, "ok": False, "error": {"code": "OUT_OF_MEMORY", "message": "cuda:1 is full", "retryable": True}}
    assert agreed_answer([ok, {"id": 3, "ok": True, "result": {}}]) is ok
    assert agreed_answer([failed, dict(failed)]) is failed
    split = agreed_answer([ok, failed])
    assert split["ok"] is False and split["id"] == 3
    assert split["error"]["code"] == "RANKS_DIVERGED" and split["error"]["retryable"] is True
    assert "rank 1: OUT_OF_MEMORY: cuda:1 is full" in split["error"]["message"]


def test_the_group_waits_for_requests_past_the_collective_timeout_and_survives_a_failed_save(tiny_model, tmp_path):
    """The engine is idle between steps for as long as a rollout (or a person) takes: the
    ranks' wait for the next request must not be held to the training collectives' limit
    (5 s here). A checkpoint rank 0 cannot write fails on every rank alike, and the group
    goes on training."""
    batch = write_batch(tmp_path / "batch.jsonl", batch_samples())
    group = TrainerGroup(2, {"A3R_TRAINER_COLLECTIVE_TIMEOUT_S": "5"})
    try:
        group.call("load", model=tiny_model, **LOAD)
        time.sleep(12)
        assert group.call("train", batch_file=batch, step=1, output_dir=str(tmp_path / "step-1"))["step"] == 1
        (tmp_path / "a-file").write_text("not a folder\n")
        refused = group.request("save", dir=str(tmp_path / "a-file" / "checkpoint"))
        assert refused["ok"] is False, refused
        assert group.call("train", batch_file=batch, step=2, output_dir=str(tmp_path / "step-2"))["step"] == 2
        assert group.call("save", dir=str(tmp_path / "checkpoint"))["step"] == 2
    finally:
        assert group.close() == 0, "".join(group.stderr_tail)
