"""TrainerSession: the state behind the protocol (policy, optimizer, step) and its ops.

A failed request leaves the session as it was: a bad batch is rejected before any gradient,
a non-finite loss or gradient norm skips the optimizer step, and if writing the adapter
fails the parameters and optimizer moments are put back.
"""

from __future__ import annotations

import copy
import math
import random
import resource
import shutil
import sys
import time
from pathlib import Path

import torch

from ..errors import BadRequest, NanLoss, NotLoaded, OutOfMemory, is_out_of_memory
from ..models import Policy, load_policy
from .batch import Sample, assign_advantages, episode_reward_stats, pack_micro_batches, read_batch
from .fields import get_field, reject_unknown
from .grpo import LossSums, collate, micro_batch_loss
from .settings import LoadSettings, parse_load


def log(message: str) -> None:
    print(f"[a3r-trainer] {message}", file=sys.stderr, flush=True)


class TrainerSession:
    def __init__(self) -> None:
        self.policy: Policy | None = None
        self.settings: LoadSettings | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.step = 0
        self.adapter_path: str | None = None
        self.written_adapters: list[Path] = []  # per-step adapter folders this process wrote, oldest first

    # -- load ------------------------------------------------------------------------------
    def load(self, request: dict) -> dict:
        settings = parse_load(request)
        policy = load_policy(settings.model, settings.device)
        random.seed(settings.seed)
        torch.manual_seed(settings.seed)
        if settings.gradient_checkpointing:
            policy.enable_gradient_checkpointing()
        lora = settings.lora
        policy.add_lora(lora.rank, lora.alpha, lora.dropout, lora.target_modules, settings.seed)
        parameters = [p for _, p in policy.trainable_named_parameters()]
        optimizer = torch.optim.AdamW(parameters, lr=settings.optimizer.lr, weight_decay=settings.optimizer.weight_decay)
        self.policy, self.settings, self.optimizer = policy, settings, optimizer
        self.step, self.adapter_path, self.written_adapters = 0, None, []
        log(f"loaded {policy.kind} model {settings.model} on {policy.device}")
        return {"device": str(policy.device), "vocab_size": policy.vocab_size, "parameters": policy.parameter_count(),
                "trainable_parameters": sum(p.numel() for p in parameters), "model_kind": policy.kind}

    def require_loaded(self) -> tuple[Policy, LoadSettings, torch.optim.Optimizer]:
        if self.policy is None or self.settings is None or self.optimizer is None:
            raise NotLoaded("no model loaded: send a load request first")
        return self.policy, self.settings, self.optimizer

    # -- train -----------------------------------------------------------------------------
    def train(self, request: dict) -> dict:
        reject_unknown(request, {"id", "op", "batch_file", "step", "output_dir"})
        batch_file = get_field(request, "batch_file", "str")
        step = get_field(request, "step", "int", minimum=0)
        output_dir = get_field(request, "output_dir", "str")
        policy, settings, optimizer = self.require_loaded()
        try:
            return self._train(policy, settings, optimizer, batch_file, step, output_dir)
        except Exception as error:
            optimizer.zero_grad(set_to_none=True)
            if is_out_of_memory(error):
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                raise OutOfMemory(f"out of memory during the step; retry with a smaller micro_batch_tokens "
                                  f"(now {settings.micro_batch_tokens}): {error}") from error
            raise

    def _train(self, policy: Policy, settings: LoadSettings, optimizer: torch.optim.Optimizer,
               batch_file: str, step: int, output_dir: str) -> dict:
        started, cpu_started = time.perf_counter(), time.process_time()
        if policy.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(policy.device)
        samples = read_batch(batch_file, policy.vocab_size, policy.max_context, policy.emittable_mask)
        totals, batch_masked = self.compute_gradients(samples)
        opt = settings.optimizer
        parameters = [p for _, p in policy.trainable_named_parameters()]
        max_norm = opt.max_grad_norm if opt.max_grad_norm > 0 else float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(parameters, max_norm))
        if not math.isfinite(totals.loss) or not math.isfinite(grad_norm):
            optimizer.zero_grad(set_to_none=True)
            raise NanLoss(f"non-finite loss ({totals.loss}) or grad norm ({grad_norm}) on {batch_file}; "
                          "the step was not applied")
        saved_parameters = [p.detach().clone() for p in parameters]
        saved_optimizer = copy.deepcopy(optimizer.state_dict())
        if grad_norm > 0:
            # A batch without signal (every group's rewards equal, no KL) has an exactly zero
            # gradient. AdamW would still move the weights along its momentum, and with the
            # sparse rewards of early RL that drift collapses the policy onto one answer.
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        try:
            Path(output_dir).mkdir(parents=True, exist_ok=True)
            policy.save_adapter(output_dir)
        except Exception:
            with torch.no_grad():
                for parameter, saved in zip(parameters, saved_parameters):
                    parameter.copy_(saved)
            optimizer.load_state_dict(saved_optimizer)
            raise
        self.step, self.adapter_path = step, str(output_dir)
        self.prune_adapters(Path(output_dir), settings.keep_adapters)
        seconds = time.perf_counter() - started
        metrics = step_metrics(totals, batch_masked, samples, grad_norm, seconds, policy.device)
        # CPU time of the process (all threads): on a shared machine the steadier figure.
        metrics["cpu_seconds"] = time.process_time() - cpu_started
        log(f"step {step}: loss {metrics['loss']:.4f} reward {metrics['reward_mean']:.3f} ({seconds:.2f}s)")
        return {"adapter_path": str(output_dir), "step": step, "metrics": metrics}

    def compute_gradients(self, samples: list[Sample]) -> tuple[LossSums, int]:
        """Advantages, then the loss of every micro-batch backpropagated into .grad (the
        sum equals the full-batch token-mean loss). Returns the summed metrics and the
        batch's trained-token count."""
        policy, settings, optimizer = self.require_loaded()
        assign_advantages(samples)
        batch_masked = sum(sample.trained_tokens for sample in samples)
        opt = settings.optimizer
        policy.set_dropout_active(True)
        optimizer.zero_grad(set_to_none=True)
        totals = LossSums()
        try:
            for group in pack_micro_batches(samples, settings.micro_batch_tokens):
                loss, sums = micro_batch_loss(policy, collate(group, policy.device), batch_masked,
                                              clip_low=opt.clip_low, clip_high=opt.clip_high, kl_coef=opt.kl_coef,
                                              dual_clip=opt.dual_clip)
                loss.backward()
                totals.add(sums)
        finally:
            policy.set_dropout_active(False)
        return totals, batch_masked

    def prune_adapters(self, written: Path, keep: int) -> None:
        """Delete the per-step adapter folders this process wrote beyond the newest `keep`.
        Only folders it wrote itself and that still hold an adapter_config.json: never a
        checkpoint, never a path someone else chose to reuse."""
        resolved = written.resolve()
        self.written_adapters = [path for path in self.written_adapters if path != resolved] + [resolved]
        if keep <= 0:
            return
        while len(self.written_adapters) > keep:
            old = self.written_adapters.pop(0)
            if (old / "adapter_config.json").is_file():
                shutil.rmtree(old, ignore_errors=True)

    # -- checkpoints -----------------------------------------------------------------------
    def save(self, request: dict) -> dict:
        from .checkpoint import save_checkpoint

        reject_unknown(request, {"id", "op", "dir"})
        directory = get_field(request, "dir", "str")
        self.require_loaded()
        save_checkpoint(self, directory)
        return {"path": directory, "step": self.step}

    def restore(self, request: dict) -> dict:
        from .checkpoint import restore_checkpoint

        reject_unknown(request, {"id", "op", "path"})
        path = get_field(request, "path", "str")
        self.require_loaded()
        adapter_path = restore_checkpoint(self, path)
        return {"step": self.step, "adapter_path": adapter_path}


def step_metrics(totals: LossSums, batch_masked: int, samples: list[Sample], grad_norm: float, seconds: float,
                 device: torch.device) -> dict:
    reward_mean, reward_std = episode_reward_stats(samples)
    known = max(totals.behaviour_tokens, 1)
    return {
        "loss": totals.loss, "kl": totals.kl / batch_masked, "grad_norm": grad_norm,
        "clip_fraction": totals.clipped / batch_masked, "entropy": totals.entropy / batch_masked,
        "tokens": totals.tokens, "trained_tokens": batch_masked, "tokens_per_s": totals.tokens / max(seconds, 1e-9),
        "trained_tokens_per_s": batch_masked / max(seconds, 1e-9), "step_seconds": seconds,
        "peak_memory_mb": peak_memory_mb(device), "samples": len(samples),
        "reward_mean": reward_mean, "reward_std": reward_std,
        # How far the batch is from on-policy (tokens with a behaviour log-prob only).
        "off_policy_fraction": totals.off_policy_samples / len(samples),
        "dual_clip_fraction": totals.dual_clipped / batch_masked,
        "behaviour_fraction": totals.behaviour_tokens / batch_masked,
        "ratio_mean": totals.ratio_sum / known if totals.behaviour_tokens else 1.0,
        "log_ratio_abs_mean": totals.log_ratio_abs_sum / known, "log_ratio_max": totals.log_ratio_max,
        "log_ratio_min": totals.log_ratio_min,
    }


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    # Linux reports ru_maxrss in KiB: the process's peak resident memory.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


__all__ = ["TrainerSession", "BadRequest"]
