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
stops the remaining ranks when one exits.

Left out: FSDP / sharded optimizer states (`strategy: fsdp`), multi-node groups, and
sharding the base model (each rank holds all of it).
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

import torch
import torch.distributed as dist

from .. import TRAINER_PROTOCOL
from ..errors import A3RError
from .batch import Sample, assign_advantages, pack_micro_batches
from .grpo import LossSums, collate, micro_batch_loss
from .protocol import _finite, handle_line
from .session import TrainerSession, log


class RankLost(A3RError):
    code = "RANK_LOST"
    retryable = True


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
        if self.rank == 0:
            answer = super().save(request)
        else:
            answer = {}
        self._collective(dist.barrier)  # the checkpoint is whole before any rank goes on
        return answer

    def _collect(self, value: Any) -> list[Any]:
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


def serve_distributed(stdin: IO[str], out: IO[str]) -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    backend = "cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
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
            dist.broadcast_object_list(box, src=0)
        except (RuntimeError, dist.DistBackendError) as error:
            log(f"rank {rank}: the group broke while waiting for a request: {error}")
            code = 1
            break
        line = box[0]
        if line is None:  # stdin closed: every rank ends
            break
        answer, stop = handle_line(session, line)
        lost = not answer.get("ok") and answer.get("error", {}).get("code") == RankLost.code
        if rank == 0:
            send(answer)
        if stop or lost:
            code = 1 if lost else 0
            break
    log(f"rank {rank} exiting")
    if code == 0:
        dist.destroy_process_group()
    return code


__all__ = ["DistributedTrainerSession", "RankLost", "serve_distributed", "shard_by_tokens"]
