"""The transformers/PEFT path end to end on CPU: a random tiny Qwen2 with Qwen's real
tokenizer, served by the reference server (a real subprocess) and trained by the trainer.

(a) one step's loss and log-probs at a temperature other than 1 match a hand computation
    from the plain transformers model; (b) logits for the completion positions only give
    the same loss and gradient as logits for every position; plus the adapter files the
    trainer writes (no frozen embeddings, older per-step folders deleted).
Slow tier: building the model and loading transformers take tens of seconds."""

import math
import sys

import pytest
import torch

from a3r_swarm.gpu_check.processes import ServerProcess, http_json
from a3r_swarm.trainer import TrainerSession
from a3r_swarm.trainer.batch import read_batch
from a3r_swarm.trainer.grpo import collate, micro_batch_loss

from conftest import write_batch

pytestmark = [pytest.mark.hf, pytest.mark.slow]
TEMPERATURE = 0.7
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]


@pytest.fixture(scope="module")
def server(qwen_model):
    process = ServerProcess(qwen_model, python=sys.executable, device="cpu", served_name="policy", start_timeout=900)
    yield process
    process.close()


@pytest.fixture(scope="module")
def session(qwen_model):
    trainer = TrainerSession()
    trainer.load({"model": qwen_model, "device": "cpu", "seed": 0, "lora": {"rank": 8, "alpha": 16, "target_modules": TARGETS},
                  "optimizer": {"lr": 0.05}})
    return trainer


def rollout(server, content, seed):
    body = {"model": "policy", "messages": [{"role": "user", "content": content}], "max_tokens": 6, "seed": seed,
            "temperature": TEMPERATURE, "logprobs": True, "return_token_ids": True}
    status, answer = http_json("POST", f"{server.url}/v1/chat/completions", body)
    assert status == 200, answer
    choice = answer["choices"][0]
    return answer["prompt_token_ids"], choice["token_ids"], [entry["logprob"] for entry in choice["logprobs"]["content"]]


def hand_logprobs(qwen_model, prompt, completion, temperature):
    """log_softmax(logits / T) of each completion token, from the plain transformers model."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(qwen_model, dtype=torch.float32).eval()
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    log_probs = torch.log_softmax(logits / temperature, dim=-1)
    return [float(log_probs[len(prompt) + i - 1, token]) for i, token in enumerate(completion)]


def test_one_step_matches_a_hand_computed_grpo_loss_at_temperature_0_7(server, session, qwen_model, tmp_path):
    prompt, first, served = rollout(server, "What is 12 + 30?", seed=1)
    _, second, served_two = rollout(server, "What is 12 + 30?", seed=2)
    hand = hand_logprobs(qwen_model, prompt, first, TEMPERATURE)
    assert served == pytest.approx(hand, abs=1e-4)  # the server reports log-probs at the sampling temperature
    assert served != pytest.approx(hand_logprobs(qwen_model, prompt, first, 1.0), abs=1e-2)
    # Behaviour log-probs shifted by known amounts, so the ratios are not 1 and both the
    # clipped and the unclipped branch (and the dual-clip) are exercised.
    shifts = [0.1, -0.5, 0.0, 1.5, -0.05, 0.3][: len(first)]
    shifts_two = [1.6, 0.2, 0.0, 0.4, -0.3, 0.1][: len(second)]  # ratio e^1.6 > 3 with A < 0: dual-clip
    behaviour = [value - shift for value, shift in zip(served, shifts)]
    behaviour_two = [value - shift for value, shift in zip(served_two, shifts_two)]
    rows = [(first, behaviour, 1.0), (second, behaviour_two, 0.0)]
    lines = [{"taskId": "t", "episodeUuid": f"e{i}", "tokenIds": prompt + ids, "lossMask": [0] * len(prompt) + [1] * len(ids),
              "logprobs": [None] * len(prompt) + values, "reward": reward, "temperature": TEMPERATURE}
             for i, (ids, values, reward) in enumerate(rows)]
    # Hand computation: A = (r - mean) / (std + 1e-6) = +-1; ratio = exp(shift); PPO clip 0.2; dual-clip 3.
    expected, count = 0.0, 0
    for (ids, values, reward), current in zip(rows, (hand, hand_logprobs(qwen_model, prompt, second, TEMPERATURE))):
        advantage = (reward - 0.5) / (0.5 + 1e-6)
        for now, then in zip(current, values):
            ratio = math.exp(now - then)
            term = -min(ratio * advantage, min(max(ratio, 0.8), 1.2) * advantage)
            if advantage < 0:
                term = min(term, -3.0 * advantage)
            expected, count = expected + term, count + 1
    expected /= count
    result = session.train({"batch_file": write_batch(tmp_path / "batch.jsonl", lines), "step": 1,
                            "output_dir": str(tmp_path / "adapters" / "step-1")})
    metrics = result["metrics"]
    assert metrics["loss"] == pytest.approx(expected, abs=1e-4)
    assert metrics["dual_clip_fraction"] > 0 and metrics["clip_fraction"] > 0 and metrics["grad_norm"] > 0
    assert metrics["off_policy_fraction"] == 1.0 and metrics["log_ratio_max"] == pytest.approx(1.6, abs=1e-3)
    # The same batch read at temperature 1 gives another loss: the temperature is used.
    for line in lines:
        line["temperature"] = 1.0
    samples = read_batch(write_batch(tmp_path / "t1.jsonl", lines), session.policy.vocab_size, 4096, None)
    at_one, _ = session.compute_gradients(samples)
    session.optimizer.zero_grad(set_to_none=True)
    assert at_one.loss != pytest.approx(expected, abs=1e-3)


def test_completion_only_logits_give_the_full_logits_loss_and_gradient(server, session, tmp_path):
    prompt, completion, served = rollout(server, "Name three colours.", seed=3)
    other_prompt, other, served_other = rollout(server, "Write some words like river stone cloud.", seed=4)
    lines = [{"taskId": "t", "episodeUuid": "a", "tokenIds": prompt + completion, "reward": 1.0, "temperature": TEMPERATURE,
              "lossMask": [0] * len(prompt) + [1] * len(completion), "logprobs": [None] * len(prompt) + served},
             {"taskId": "t", "episodeUuid": "b", "tokenIds": other_prompt + other, "reward": 0.0, "temperature": TEMPERATURE,
              "lossMask": [0] * len(other_prompt) + [1] * len(other), "logprobs": [None] * len(other_prompt) + served_other}]
    samples = read_batch(write_batch(tmp_path / "b.jsonl", lines), session.policy.vocab_size, 4096, None)
    from a3r_swarm.trainer.batch import assign_advantages

    assign_advantages(samples)
    masked = sum(s.trained_tokens for s in samples)
    results = []
    for full in (False, True):
        session.optimizer.zero_grad(set_to_none=True)
        loss, sums = micro_batch_loss(session.policy, collate(samples, session.policy.device), masked, clip_low=0.2,
                                      clip_high=0.2, kl_coef=0.01, dual_clip=3.0, full_logits=full)
        loss.backward()
        grads = [p.grad.clone() for _, p in session.policy.trainable_named_parameters() if p.grad is not None]
        results.append((float(loss.detach()), sums.entropy, grads))
    session.optimizer.zero_grad(set_to_none=True)
    (loss_a, entropy_a, grads_a), (loss_b, entropy_b, grads_b) = results
    assert loss_a == pytest.approx(loss_b, abs=1e-6) and entropy_a == pytest.approx(entropy_b, rel=1e-5)
    assert len(grads_a) == len(grads_b) > 0
    for a, b in zip(grads_a, grads_b):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def test_adapters_hold_no_frozen_embeddings_and_old_ones_are_deleted(server, session, tmp_path):
    prompt, completion, served = rollout(server, "What is 12 + 30?", seed=5)
    _, other, served_other = rollout(server, "What is 12 + 30?", seed=6)
    lines = [{"taskId": "t", "episodeUuid": "a", "tokenIds": prompt + completion, "reward": 1.0, "temperature": TEMPERATURE,
              "lossMask": [0] * len(prompt) + [1] * len(completion), "logprobs": [None] * len(prompt) + served},
             {"taskId": "t", "episodeUuid": "b", "tokenIds": prompt + other, "reward": 0.0, "temperature": TEMPERATURE,
              "lossMask": [0] * len(prompt) + [1] * len(other), "logprobs": [None] * len(prompt) + served_other}]
    batch = write_batch(tmp_path / "batch.jsonl", lines)
    folders = [tmp_path / "adapters" / f"step-{step}" for step in (1, 2, 3)]
    for step, folder in enumerate(folders, start=1):
        session.train({"batch_file": batch, "step": step, "output_dir": str(folder)})
    assert not folders[0].exists() and folders[1].is_dir() and folders[2].is_dir()  # keep_adapters 2
    size = sum(path.stat().st_size for path in folders[2].iterdir())
    # LoRA rank 8 on 2 layers + lm_head is ~5 MB in fp32; the tied 151,669 x 64 embedding
    # alone would add 39 MB.
    assert size < 8 * 2**20, f"adapter is {size / 2**20:.1f} MB"
    from safetensors import safe_open

    with safe_open(str(folders[2] / "adapter_model.safetensors"), "pt") as handle:
        assert all("lora_" in key for key in handle.keys())
    # The server loads and serves it.
    assert http_json("POST", f"{server.url}/v1/load_lora_adapter", {"lora_name": "s3", "lora_path": str(folders[2])})[0] == 200
    body = {"model": "s3", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    assert http_json("POST", f"{server.url}/v1/chat/completions", body)[0] == 200
    assert http_json("POST", f"{server.url}/v1/unload_lora_adapter", {"lora_name": "s3"})[0] == 200
