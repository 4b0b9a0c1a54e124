"""Continuous batching for the reference server: one thread runs the model, one padded
forward per step for every running request of one adapter.

Requests join the running batch at the next step when they use the same adapter (the base
model counts as one) and leave it when they finish. A request for another adapter waits
until the running ones finish, and while one waits no more requests join the running batch,
so no adapter starves. Each step holds the server's model lock, so adapter loads and
unloads happen between steps, never inside one.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections import deque
from dataclasses import dataclass, field

import torch

from ..models import Policy
from .generation import Completion, Sequence, advance_batch

MAX_BATCH = 64


@dataclass
class Job:
    adapter: str | None
    sequence: Sequence
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Batcher:
    def __init__(self, policy: Policy, model_lock: threading.Lock, max_batch: int = MAX_BATCH):
        self.policy, self.model_lock, self.max_batch = policy, model_lock, max_batch
        self.pending: deque[Job] = deque()
        self.running: list[Job] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._loop, name="a3r-batcher", daemon=True).start()

    def run(self, adapter: str | None, sequence: Sequence) -> Completion:
        """Generate `sequence` with `adapter` (None: the base model); blocks until done."""
        job = Job(adapter, sequence)
        if not sequence.done:
            with self.changed:
                self.pending.append(job)
                self.changed.notify_all()
            job.done.wait()
        if job.error is not None:
            raise job.error
        return sequence.result()

    def in_use(self, adapter: str) -> bool:
        with self.changed:
            return any(job.adapter == adapter for job in (*self.pending, *self.running))

    def wait_unused(self, adapter: str, timeout: float) -> bool:
        """Until no running or waiting request uses `adapter` (for an unload)."""
        with self.changed:
            return self.changed.wait_for(
                lambda: not any(job.adapter == adapter for job in (*self.pending, *self.running)), timeout)

    def _admit(self) -> None:
        with self.changed:
            while not self.running and not self.pending:
                self.changed.wait()
            adapter = self.running[0].adapter if self.running else self.pending[0].adapter
            if any(job.adapter != adapter for job in self.pending) and self.running:
                return  # another adapter waits: let the running batch drain
            kept: deque[Job] = deque()
            while self.pending:
                job = self.pending.popleft()
                if job.adapter == adapter and len(self.running) < self.max_batch:
                    self.running.append(job)
                else:
                    kept.append(job)
            self.pending = kept

    def _step(self) -> None:
        jobs = list(self.running)
        with self.model_lock, self.policy.use_adapter(jobs[0].adapter):
            logits = self.policy.batch_next_token_logits([job.sequence.ids for job in jobs])
            advance_batch(self.policy, [job.sequence for job in jobs], logits)

    def _loop(self) -> None:
        while True:
            self._admit()
            try:
                self._step()
            except Exception as error:  # one bad step fails its requests, never the server
                traceback.print_exc(file=sys.stderr)
                for job in self.running:
                    job.error = error
                    job.sequence.finish = job.sequence.finish or "error"
            finished = [job for job in self.running if job.sequence.done]
            with self.changed:
                self.running = [job for job in self.running if not job.sequence.done]
                self.changed.notify_all()
            for job in finished:
                job.done.set()


def new_generator(seed: int | None, shared: torch.Generator) -> torch.Generator:
    """A request with a seed gets its own stream (the same seed gives the same answer,
    whatever else runs in the batch); one without draws from the server's."""
    return torch.Generator().manual_seed(seed) if seed is not None else shared
