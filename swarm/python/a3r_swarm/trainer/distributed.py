"""The persistent trainer as a data-parallel group under torchrun (`trainer.nprocs: N`).

    python -m torch.distributed.run --standalone --nproc_per_node N -m a3r_swarm.trainer

Every rank is one process with the whole policy (LoRA adapters are small; the base model
is frozen). Rank 0 alone speaks a3r-trainer/1: it reads each request from stdin, hands it
to every rank (`broadcast_object_list`) and writes the answer; the other ranks never touch
stdin or the protocol's stdout. A train request is done by all ranks at once:

- each reads the batch file and computes the GRPO advantages over the WHOLE batch (a
  group's baseline needs all its episodes), then takes its shard: samples dealt by token
  count, longest first, to the rank with the fewest tokens so far (`shard_by_tokens`);
- each backpropagates its shard's loss divided by the whole batch's trained-token count,
  so the SUM of the ranks' gradients (`all_reduce`) is exactly the single-process
  gradient; clipping, the NaN check and the AdamW step then run on identical gradients
  and keep the replicas identical;
- only rank 0 writes the adapter and checkpoints (every rank restores from them).

The strategy is plain data parallelism with torch.distributed collectives (what DDP does,
without its bucketing: the adapters' gradients are a few MB). Backend: gloo for CPU
tensors, NCCL for CUDA ones; each rank uses cuda:LOCAL_RANK of the GPUs it was given.

A rank that dies breaks the group: the collective raises on the others, rank 0 answers
the request with RANK_LOST (retryable) and exits, and the engine restarts the trainer
(the whole group) from its last checkpoint as it does for a dead trainer. torchrun also
stops the remaining ranks when one exits. Ranks that answer one request differently (one
failed where another succeeded: an out-of-memory load on one GPU, the adapter write of
rank 0 rolled back while the others stepped) no longer hold the same replica: rank 0
answers RANKS_DIVERGED (retryable) and the group ends the same way.

Timeouts: the ranks wait for the next request on a gloo group of their own with no
practical limit (the engine may be idle for hours: a long rollout, a person approving a
command), never on the training collectives' group, whose limit
(A3R_TRAINER_COLLECTIVE_TIMEOUT_S, default 1800 s) bounds a step waiting on a hung rank.

Left out: FSDP / sharded optimizer states (`strategy: fsdp`), multi-node groups, and
sharding the base model (each rank holds all of it).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import IO, Any

import torch
import torch.distributed as dist

from .. import TRAINER_PROTOCOL
from ..errors import A3RError
from .batch import Sample, assign_advantages, pack_micro_batches
from .grpo import LossSums, collate, micro_batch_loss
from .protocol import _finite, error_answer, handle_line
from .session import TrainerSession, log


class RankLost(A3RError):
    code = "RANK_LOST"
    retryable = True


class RanksDiverged(A3RError):
    code = "RANKS_DIVERGED"
    retryable = True


# Waiting for a request is no hang: a year, as "no limit" (gloo needs one).
IDLE_TIMEOUT = timedelta(days=365)


def shard_by_tokens(samples: list[Sample], world: int) -> list[list[Sample]]:
    """Deals the samples to `world` ranks so their token counts are close: longest first,
    each to the rank with the fewest tokens so far (ties: the lowest rank). Deterministic,
    so every rank computes the same shards; a rank may get none (a tiny batch)."""
    shards: list[list[Sample]] = [[] for _ in range(world)]
    loads = [0] * world
    for sample in sorted(samples, key=lambda s: (-len(s.token_ids), s.line)):
        rank = min(range(world), key=lambda r: (loads[r], r))
        shards[rank].append(sample)
        loads[rank] += len(sample.token_ids)
    return shards


class DistributedTrainerSession(TrainerSession):
    """A TrainerSession that trains its shard and all-reduces the gradients."""

    def __init__(self, rank: int, world: int, local_rank: int) -> None:
        super().__init__()
        self.rank, self.world, self.local_rank = rank, world, local_rank

    def load(self, request: dict) -> dict:
        request = dict(request)
        if torch.cuda.is_available() and request.get("device", "auto") in ("auto", "cuda"):
            request["device"] = f"cuda:{self.local_rank}"
        answer = super().load(request)
        if self.rank > 0:
            # One writer: the other replicas' adapters are the same weights.
            self.policy.save_adapter = lambda directory: None  # type: ignore[method-assign]
        return {**answer, "world_size": self.world, "strategy": "ddp"}

    def prune_adapters(self, written, keep: int) -> None:
        if self.rank == 0:
            super().prune_adapters(written, keep)

    def train(self, request: dict) -> dict:
        """A rank that fails before the gradient exchange (a batch file it cannot read, no
        model loaded) still joins it, with its failure: the others wait there, and would
        otherwise meet its next request's collective instead."""
        self.exchanged = False
        try:
            return super().train(request)
        except RankLost:
            raise
        except Exception as error:
            if not self.exchanged:
                self._collect([f"rank {self.rank}: {type(error).__name__}: {error}", LossSums()])
            raise

    def compute_gradients(self, samples: list[Sample]) -> tuple[LossSums, int]:
        policy, settings, optimizer = self.require_loaded()
        assign_advantages(samples)
        batch_masked = sum(sample.trained_tokens for sample in samples)
        mine = shard_by_tokens(samples, self.world)[self.rank]
        opt = settings.optimizer
        policy.set_dropout_active(True)
        optimizer.zero_grad(set_to_none=True)
        totals = LossSums()
        failure: str | None = None
        try:
            for group in pack_micro_batches(mine, settings.micro_batch_tokens) if mine else []:
                loss, sums = micro_batch_loss(policy, collate(group, policy.device), batch_masked,
                                              clip_low=opt.clip_low, clip_high=opt.clip_high, kl_coef=opt.kl_coef,
                                              dual_clip=opt.dual_clip)
                loss.backward()
                totals.add(sums)
        except Exception as error:  # noqa: BLE001 - every rank must reach the collectives below
            failure = f"rank {self.rank}: {type(error).__name__}: {error}"
        finally:
            policy.set_dropout_active(False)
        self.exchanged = True
        gathered = self._collect([failure, totals])
        failures = [entry[0] for entry in gathered if entry[0] is not None]
        if failures:
            optimizer.zero_grad(set_to_none=True)
            raise RuntimeError("; ".join(failures))
        for _, parameter in policy.trainable_named_parameters():
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            self._collective(lambda grad=parameter.grad: dist.all_reduce(grad, op=dist.ReduceOp.SUM))
        combined = LossSums()
        for _, sums in gathered:
            combined.add(sums)
        return combined, batch_masked

    def save(self, request: dict) -> dict:
        """Rank 0 writes; every rank waits until the checkpoint is whole, and fails with it
        when it could not be written (so the ranks answer alike and stay in step)."""
        answer: dict = {}
        failure: str | None = None
        if self.rank == 0:
            try:
                answer = super().save(request)
            except Exception as error:  # noqa: BLE001 - the others wait for the outcome below
                failure = f"{type(error).__name__}: {error}"
                raised = error
        outcome = self._collect(failure)[0]
        if outcome is not None:
            if self.rank == 0:
                raise raised
            raise RuntimeError(f"rank 0 could not write the checkpoint: {outcome}")
        return answer

    def _collect(self, value: Any) -> list[Any]:
        """Every rank's `value`, by rank (a Python object: through the CPU, gloo)."""
        gathered: list[Any] = [None] * self.world
        self._collective(lambda: dist.all_gather_object(gathered, value))
        return gathered

    def _collective(self, operation) -> None:
        try:
            operation()
        except (RuntimeError, dist.DistBackendError) as error:
            raise RankLost(f"a trainer rank is gone ({type(error).__name__}: {error}); the group must be restarted "
                           "from the last checkpoint") from error


def _request_of_rank0(stdin: IO[str]) -> str | None:
    for line in stdin:
        if line.strip():
            return line
    return None


def collective_timeout() -> timedelta:
    """How long a training collective may wait for a rank: A3R_TRAINER_COLLECTIVE_TIMEOUT_S."""
    text = os.environ.get("A3R_TRAINER_COLLECTIVE_TIMEOUT_S", "1800")
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise SystemExit(f"A3R_TRAINER_COLLECTIVE_TIMEOUT_S={text!r}: write a positive number of seconds, e.g. 1800")
    return timedelta(seconds=seconds)


def agreed_answer(answers: list[dict]) -> dict:
    """Rank 0's answer, unless the ranks disagree: one succeeded where another failed, so
    their replicas may differ, and the group must restart from its last checkpoint."""
    first = answers[0]
    if all(answer.get("ok") == first.get("ok") for answer in answers):
        return first
    failed = "; ".join(f"rank {rank}: {answer['error'].get('code')}: {answer['error'].get('message')}"
                       for rank, answer in enumerate(answers) if not answer.get("ok"))
    message = (f"the trainer ranks answered request {first.get('id')!r} differently ({failed}; the others succeeded): "
               "their replicas may differ, so the group ends and is restarted from the last checkpoint")
    return error_answer(first.get("id"), RanksDiverged.code, message, RanksDiverged.retryable)


def serve_distributed(stdin: IO[str], out: IO[str]) -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    cuda = torch.cuda.is_available()
    if cuda and local_rank < torch.cuda.device_count():
        torch.cuda.set_device(local_rank)  # NCCL's own buffers on this rank's GPU, not all on cuda:0
    dist.init_process_group(backend="cpu:gloo,cuda:nccl" if cuda else "gloo", timeout=collective_timeout())
    requests = dist.new_group(backend="gloo", timeout=IDLE_TIMEOUT)
    session = DistributedTrainerSession(rank, world, local_rank)

    def send(answer: dict) -> None:
        out.write(json.dumps(_finite(answer), allow_nan=False) + "\n")
        out.flush()

    if rank == 0:
        send({"event": "ready", "protocol": TRAINER_PROTOCOL, "pid": os.getpid(), "world_size": world})
    else:
        out.close()
    code = 0
    while True:
        box = [_request_of_rank0(stdin) if rank == 0 else None]
        try:
            dist.broadcast_object_list(box, src=0, group=requests)
        except (RuntimeError, dist.DistBackendError) as error:
            log(f"rank {rank}: the group broke while waiting for a request: {error}")
            code = 1
            break
        line = box[0]
        if line is None:  # stdin closed: every rank ends
            break
        answer, stop = handle_line(session, line)
        lost = not answer.get("ok") and answer.get("error", {}).get("code") == RankLost.code
        if not lost:
            answers: list[Any] = [None] * world
            try:
                dist.all_gather_object(answers, answer, group=requests)
                answer = agreed_answer(answers)
            except (RuntimeError, dist.DistBackendError) as error:
                answer = error_answer(answer.get("id"), RankLost.code, f"a trainer rank is gone ({error})", True)
            lost = not answer.get("ok") and answer.get("error", {}).get("code") in (RankLost.code, RanksDiverged.code)
        if rank == 0:
            send(answer)
        if stop or lost:
            code = 1 if lost else 0
            break
    log(f"rank {rank} exiting")
    if code == 0:
        dist.destroy_process_group()
    return code


__all__ = ["DistributedTrainerSession", "RankLost", "RanksDiverged", "agreed_answer", "serve_distributed", "shard_by_tokens"]
