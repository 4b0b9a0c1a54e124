"""The GRPO loss on hand-made batches, through the trainer's own gradient code."""

import math

import pytest
import torch

from a3r_swarm.logprobs import masked_log_softmax
from a3r_swarm.trainer import TrainerSession
from a3r_swarm.trainer.batch import Sample, assign_advantages
from a3r_swarm.trainer.grpo import collate, trained_log_probs

PROMPT = [0, 300, 301, 4, 1, 302, 303, 4, 2]  # system / user (hash ids) / assistant


@pytest.fixture()
def session(tiny_model):
    trainer = TrainerSession()
    trainer.load({"model": tiny_model, "device": "cpu", "seed": 0, "lora": {"rank": 4, "alpha": 8},
                  "optimizer": {"lr": 0.01, "clip_low": 0.2, "clip_high": 0.2}})
    # Non-zero adapters so every LoRA parameter gets a gradient, not only lora_b.
    with torch.no_grad():
        for name, parameter in trainer.policy.trainable_named_parameters():
            if name.endswith("lora_b"):
                parameter.normal_(std=0.05)
    return trainer


def make(task, episode, completion, reward, mask=None, behaviour=None, line=1):
    ids = PROMPT + completion
    loss_mask = [0] * len(PROMPT) + (mask or [1] * len(completion))
    return Sample(line, task, episode, ids, loss_mask, behaviour or [None] * len(ids), reward)


def grads(session):
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for _, p in session.policy.trainable_named_parameters()]


def current_logprobs(session, sample):
    """Log-probs of the sample's tokens under the current weights (None off the mask)."""
    with torch.no_grad():
        batch = collate([sample], session.policy.device)
        values, _ = trained_log_probs(session.policy, batch)
    out, it = [None] * len(sample.token_ids), iter(values.tolist())
    for index in range(1, len(sample.token_ids)):
        if sample.loss_mask[index]:
            out[index] = next(it)
    return out


def test_advantages_by_group_count_each_episode_once():
    samples = [make("a", "e1", [5], 1.0), make("a", "e1", [6], 1.0), make("a", "e2", [7], 0.0),
               make("b", "e3", [5], 0.5), make("b", "e4", [6], 0.5)]
    assign_advantages(samples)
    # Group a: episodes {1, 0} -> mean 0.5, std 0.5 (e1 counted once, not twice).
    assert samples[0].advantage == pytest.approx(0.5 / (0.5 + 1e-6))
    assert samples[1].advantage == samples[0].advantage
    assert samples[2].advantage == pytest.approx(-0.5 / (0.5 + 1e-6))
    assert samples[3].advantage == 0 and samples[4].advantage == 0


def test_ratio_is_one_when_behaviour_equals_current(session):
    base = [make("a", "e1", [5, 6, 4], 1.0), make("a", "e2", [7, 4], 0.0)]
    totals_null, _ = session.compute_gradients(base)
    g_null = grads(session)
    with_behaviour = [make(s.task_id, s.episode_uuid, s.token_ids[len(PROMPT):], s.reward,
                           behaviour=current_logprobs(session, s)) for s in base]
    totals_known, _ = session.compute_gradients(with_behaviour)
    assert totals_known.clipped == 0
    assert totals_known.loss == pytest.approx(totals_null.loss, abs=1e-6)
    for a, b in zip(g_null, grads(session)):
        assert torch.allclose(a, b, atol=1e-6)


def test_token_mean_over_the_whole_batch(session):
    # ratio 1: per-token loss is -A. A = +1 on 1 token, -1 on 3 tokens: token mean is
    # (-1 + 3) / 4 = 0.5 (a per-sample mean would give 0).
    samples = [make("a", "e1", [5], 1.0), make("a", "e2", [6, 7, 4], 0.0)]
    totals, masked = session.compute_gradients(samples)
    assert masked == 4
    assert totals.loss == pytest.approx(0.5, abs=1e-5)


def test_only_loss_masked_tokens_contribute(session):
    # Completion with a lossMask 0 token in the middle (e.g. a tool result).
    sample = make("a", "e1", [5, 300, 6, 4], 1.0, mask=[1, 0, 1, 1])
    other = make("a", "e2", [7, 4], 0.0)
    session.compute_gradients([sample, other])
    trainer_grads = grads(session)

    policy = session.policy
    for _, parameter in policy.trainable_named_parameters():
        parameter.grad = None
    total, manual = 0, 0.0
    for s in (sample, other):
        ids = torch.tensor([s.token_ids])
        log_probs = masked_log_softmax(policy.forward_logits(ids, torch.ones_like(ids))[0, :-1], policy.emittable_mask)
        for position in range(1, len(s.token_ids)):
            if s.loss_mask[position]:
                value = log_probs[position - 1, s.token_ids[position]]
                manual = manual - torch.exp(value - value.detach()) * s.advantage
                total += 1
    (manual / total).backward()
    assert total == 5
    for a, (_, p) in zip(trainer_grads, policy.trainable_named_parameters()):
        # fp32 sums in another order (torch 2.x's BLAS batches rows differently): ~1e-6 apart.
        assert torch.allclose(a, p.grad if p.grad is not None else torch.zeros_like(p), rtol=1e-4, atol=1e-5)


def test_clipping_active_only_where_the_clipped_term_is_smaller(session):
    up = make("a", "e1", [5, 4], 1.0)  # A = +1
    down = make("a", "e2", [6, 7, 4], 0.0)  # A = -1
    current = {id(s): current_logprobs(session, s) for s in (up, down)}

    def with_ratio(s, ratio):
        s.behaviour_logprobs = [None if v is None else v - math.log(ratio) for v in current[id(s)]]

    with_ratio(up, 2.0)
    with_ratio(down, 2.0)
    totals, masked = session.compute_gradients([up, down])
    # up: min(2*1, 1.2*1) = 1.2 -> clipped (2 tokens); down: min(-2, -1.2) = -2 -> not clipped (3 tokens)
    assert totals.clipped == 2 and masked == 5
    assert totals.loss == pytest.approx((-1.2 * 2 + 2 * 3) / 5, rel=1e-4)
    ratio_two = grads(session)
    # Clipped tokens contribute a constant: a larger ratio on them changes nothing ...
    with_ratio(up, 4.0)
    session.compute_gradients([up, down])
    for a, b in zip(ratio_two, grads(session)):
        assert torch.allclose(a, b, atol=1e-7)
    # ... while inside the clip range they do contribute.
    with_ratio(up, 1.1)
    inside, _ = session.compute_gradients([up, down])
    assert inside.clipped == 0
    assert any(not torch.allclose(a, b, atol=1e-6) for a, b in zip(ratio_two, grads(session)))


def test_micro_batches_give_the_full_batch_gradient(session):
    samples = [make("a", f"e{i}", [5 + i, 6, 4][: 1 + i % 3], float(i % 2)) for i in range(6)]
    samples += [make("b", f"f{i}", [9, 10 + i, 4], float(i == 0)) for i in range(3)]
    session.settings.micro_batch_tokens = 10**6
    whole, _ = session.compute_gradients(samples)
    g_whole = grads(session)
    session.settings.micro_batch_tokens = 1  # one sample per micro-batch
    split, _ = session.compute_gradients(samples)
    assert split.loss == pytest.approx(whole.loss, abs=1e-6)
    for a, b in zip(g_whole, grads(session)):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)  # fp32 sums in another order


def test_log_probs_are_taken_at_the_samples_temperature(session):
    sample = make("a", "e1", [5, 6, 4], 1.0)
    sample.temperature = 0.5
    ids = torch.tensor([sample.token_ids])
    with torch.no_grad():
        logits = session.policy.forward_logits(ids, torch.ones_like(ids))[0, :-1]
        expected = masked_log_softmax(logits / 0.5, session.policy.emittable_mask)
        values, _ = trained_log_probs(session.policy, collate([sample], session.policy.device))
    positions = range(len(PROMPT), len(sample.token_ids))
    assert values.tolist() == pytest.approx([float(expected[p - 1, sample.token_ids[p]]) for p in positions], abs=1e-5)


def test_dual_clip_caps_a_stale_negative_advantage_token(session):
    # A = -1 on e2's token; its behaviour log-prob 5 nats below the current one (ratio e^5,
    # a stale sample): PPO alone gives loss e^5 and a huge gradient; dual-clip caps it at 3.
    good = make("a", "e1", [5], 1.0)
    stale = make("a", "e2", [6], 0.0)
    now = current_logprobs(session, stale)
    stale.behaviour_logprobs = [None if v is None else v - 5.0 for v in now]
    from a3r_swarm.trainer.grpo import micro_batch_loss

    assign_advantages([good, stale])
    for dual_clip, expected in ((0.0, math.exp(5.0)), (3.0, 3.0)):
        session.optimizer.zero_grad(set_to_none=True)
        loss, sums = micro_batch_loss(session.policy, collate([stale], session.policy.device), 1, clip_low=0.2,
                                      clip_high=0.2, kl_coef=0.0, dual_clip=dual_clip)
        assert float(loss.detach()) == pytest.approx(expected * (1 - 1e-6), rel=1e-4)
        loss.backward()
        norm = math.sqrt(sum(float((g ** 2).sum()) for g in grads(session)))
        assert (norm == 0) == (dual_clip > 0)  # beyond the cap the token has no gradient
        assert sums.dual_clipped == (1 if dual_clip else 0) and sums.off_policy_samples == 1
        assert sums.log_ratio_max == pytest.approx(5.0, abs=1e-4)
    session.optimizer.zero_grad(set_to_none=True)


def test_older_adapter_folders_are_deleted(session, tmp_path):
    import json as json_module

    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json_module.dumps({"taskId": "a", "episodeUuid": f"e{i}", "tokenIds": PROMPT + [5 + i, 4],
                                                "lossMask": [0] * len(PROMPT) + [1, 1], "reward": float(i),
                                                "temperature": 0.8}) + "\n" for i in range(2)))
    keep = tmp_path / "checkpoint-like"  # a folder the trainer did not write as a step's output stays
    keep.mkdir()
    for step in (1, 2, 3):
        session.train({"batch_file": str(batch), "step": step, "output_dir": str(tmp_path / f"step-{step}")})
    assert [p.name for p in sorted(tmp_path.iterdir()) if p.name.startswith("step-")] == ["step-2", "step-3"]
    assert keep.is_dir()
