"""The reference server as a real subprocess on a free port."""

import subprocess
import sys
import time

import pytest
import torch

from a3r_swarm.gpu_check.processes import ServerProcess, child_env, http_json
from a3r_swarm.trainer import TrainerSession
from a3r_swarm.trainer.batch import Sample
from a3r_swarm.trainer.grpo import collate, trained_log_probs

from conftest import sample, write_batch

MESSAGES = [{"role": "system", "content": "You name colours."}, {"role": "user", "content": "What colour is the sky?"}]


@pytest.fixture(scope="module")
def server(tiny_model):
    process = ServerProcess(tiny_model, python=sys.executable, device="cpu", served_name="policy")
    yield process
    process.close()


def chat(server, **fields):
    body = {"model": "policy", "messages": MESSAGES, "return_token_ids": True, **fields}
    return http_json("POST", f"{server.url}/v1/chat/completions", body)


def trainer_logprobs(session, prompt, completion, temperature=1.0):
    s = Sample(1, "t", "e", prompt + completion, [0] * len(prompt) + [1] * len(completion),
               [None] * (len(prompt) + len(completion)), 0.0, temperature)
    with torch.no_grad():
        values, _ = trained_log_probs(session.policy, collate([s], session.policy.device))
    return values.tolist()


def test_health_and_models(server):
    assert http_json("GET", f"{server.url}/health") == (200, {})
    status, models = http_json("GET", f"{server.url}/v1/models")
    assert status == 200 and models["object"] == "list" and models["data"][0]["id"] == "policy"


def test_chat_completion_fields(server):
    status, body = chat(server, max_tokens=5, temperature=1.0, seed=3, logprobs=True, return_token_ids=True,
                        return_tokens_as_token_ids=True)
    assert status == 200, body
    assert body["object"] == "chat.completion" and body["model"] == "policy" and body["id"].startswith("chatcmpl-")
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] in ("stop", "length")
    ids = choice["token_ids"]
    assert 1 <= len(ids) <= 5 and body["prompt_token_ids"][-1] == 2
    content = choice["logprobs"]["content"]
    assert [entry["token"] for entry in content] == [f"token_id:{i}" for i in ids]
    assert all(entry["logprob"] <= 0 for entry in content)
    assert body["usage"] == {"prompt_tokens": len(body["prompt_token_ids"]), "completion_tokens": len(ids),
                             "total_tokens": len(body["prompt_token_ids"]) + len(ids)}
    # The same seed gives the same answer; greedy is deterministic too.
    assert chat(server, max_tokens=5, seed=3)[1]["choices"][0]["token_ids"] == ids
    greedy = chat(server, max_tokens=4, temperature=0)[1]["choices"][0]
    assert greedy["token_ids"] == chat(server, max_tokens=4, temperature=0)[1]["choices"][0]["token_ids"]
    assert chat(server, max_tokens=2)[1]["choices"][0]["logprobs"] is None  # logprobs not asked for
    plain = chat(server, max_tokens=2, return_token_ids=False)[1]  # token ids only when asked for, as vLLM
    assert plain["prompt_token_ids"] is None and plain["choices"][0]["token_ids"] is None


def test_sampling_fields_the_trainer_cannot_correct_for_are_refused(server):
    for field, value in [("top_k", 20), ("repetition_penalty", 1.05), ("min_p", 0.1), ("presence_penalty", 0.5),
                         ("frequency_penalty", 0.1), ("logit_bias", {"5": 3}), ("min_tokens", 2),
                         ("repetition_penalty", True)]:
        status, body = chat(server, max_tokens=2, **{field: value})
        assert status == 400 and body["error"]["param"] == field, (field, body)
        assert "trainer cannot correct" in body["error"]["message"]
    # vLLM's neutral values pass, as `--generation-config vllm` would send them.
    status, body = chat(server, max_tokens=2, top_k=-1, min_p=0, repetition_penalty=1, presence_penalty=0,
                        frequency_penalty=0.0, logit_bias={}, min_tokens=0)
    assert status == 200, body


def test_top_p_keeps_vllms_nucleus():
    from a3r_swarm.server.generation import apply_top_p

    log_probs = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    # vLLM drops the tokens whose ascending cumulative mass is <= 1 - top_p.
    kept = apply_top_p(log_probs, 0.8).exp()
    assert kept.tolist() == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0, 0])
    assert apply_top_p(log_probs, 0.81).exp()[2] > 0 and apply_top_p(log_probs, 0.01).exp().tolist() == [1, 0, 0, 0]


def test_concurrent_requests_are_batched_and_answer_as_alone(server):
    import concurrent.futures

    alone = {seed: chat(server, max_tokens=6, seed=seed, logprobs=True)[1]["choices"][0] for seed in range(6)}
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda seed: chat(server, max_tokens=6, seed=seed % 6, logprobs=True), range(12)))
    for seed, (status, body) in enumerate(answers):
        assert status == 200
        choice = body["choices"][0]
        assert choice["token_ids"] == alone[seed % 6]["token_ids"]  # a seeded stream does not depend on the batch
        got = [entry["logprob"] for entry in choice["logprobs"]["content"]]
        assert got == pytest.approx([entry["logprob"] for entry in alone[seed % 6]["logprobs"]["content"]], abs=1e-4)


def test_stop_strings_and_max_tokens(server):
    status, body = chat(server, max_tokens=8, temperature=0)
    text = body["choices"][0]["message"]["content"]
    words = text.split()
    if len(words) >= 2:
        status, stopped = chat(server, max_tokens=8, temperature=0, stop=[words[1]])
        assert stopped["choices"][0]["finish_reason"] == "stop"
        assert words[1] not in stopped["choices"][0]["message"]["content"].split()[1:2]
    status, short = chat(server, max_tokens=1, temperature=0)
    assert len(short["choices"][0]["token_ids"]) == 1


def test_bad_requests_answer_400_or_404_and_keep_serving(server):
    status, body = http_json("POST", f"{server.url}/v1/chat/completions", raw=b"{oops")
    assert status == 400 and "not valid JSON" in body["error"]["message"]
    status, body = chat(server, temperature="hot")
    assert status == 400 and "temperature" in body["error"]["message"]
    status, body = http_json("POST", f"{server.url}/v1/chat/completions", {"model": "policy", "messages": [{"role": "robot"}]})
    assert status == 400 and "messages[0].role" in body["error"]["message"]
    status, body = chat(server, model="nope")
    assert status == 404 and body["error"]["type"] == "NotFoundError"
    assert http_json("GET", f"{server.url}/health")[0] == 200


def test_logprobs_match_the_trainer_and_adapters_load(server, tiny_model, tmp_path):
    session = TrainerSession()
    session.load({"model": tiny_model, "device": "cpu", "seed": 0, "lora": {"rank": 4, "alpha": 8}, "optimizer": {"lr": 0.05}})
    status, body = chat(server, max_tokens=6, seed=1, logprobs=True)
    prompt, completion = body["prompt_token_ids"], body["choices"][0]["token_ids"]
    served = [entry["logprob"] for entry in body["choices"][0]["logprobs"]["content"]]
    assert trainer_logprobs(session, prompt, completion) == pytest.approx(served, abs=1e-4)  # ratio 1

    # One real step -> an adapter; the server serves it with the trainer's log-probs too.
    batch = [sample("t", "e1", prompt, completion, 1.0, served), sample("t", "e2", prompt, [7, 4], 0.0)]
    adapter = session.train({"batch_file": write_batch(tmp_path / "b.jsonl", batch), "step": 1,
                             "output_dir": str(tmp_path / "step-1")})["adapter_path"]
    assert http_json("POST", f"{server.url}/v1/load_lora_adapter", {"lora_name": "a3r-step-1", "lora_path": adapter})[0] == 200
    assert http_json("POST", f"{server.url}/v1/load_lora_adapter", {"lora_name": "a3r-step-1", "lora_path": adapter})[0] == 400
    status, models = http_json("GET", f"{server.url}/v1/models")
    assert {"id": "a3r-step-1", "parent": "policy"}.items() <= models["data"][1].items()
    status, tuned = chat(server, model="a3r-step-1", max_tokens=6, seed=1, logprobs=True)
    assert status == 200 and tuned["model"] == "a3r-step-1"
    ids = tuned["choices"][0]["token_ids"]
    values = [entry["logprob"] for entry in tuned["choices"][0]["logprobs"]["content"]]
    assert trainer_logprobs(session, tuned["prompt_token_ids"], ids) == pytest.approx(values, abs=1e-4)

    status, body = http_json("POST", f"{server.url}/v1/load_lora_adapter", {"lora_name": "broken", "lora_path": str(tmp_path / "none")})
    assert status == 400 and str(tmp_path / "none") in body["error"]["message"]
    assert chat(server, model="a3r-step-1", max_tokens=2)[0] == 200  # previous adapter still serving
    assert http_json("POST", f"{server.url}/v1/unload_lora_adapter", {"lora_name": "a3r-step-1"})[0] == 200
    assert http_json("POST", f"{server.url}/v1/unload_lora_adapter", {"lora_name": "a3r-step-1"})[0] == 404
    assert chat(server, model="a3r-step-1")[0] == 404


def test_logprobs_at_the_sampling_temperature_match_the_trainer(server, tiny_model):
    session = TrainerSession()
    session.load({"model": tiny_model, "device": "cpu", "seed": 0, "lora": {"rank": 4, "alpha": 8}})
    for temperature in (0.6, 1.7):
        status, body = chat(server, max_tokens=6, seed=2, temperature=temperature, logprobs=True)
        prompt, completion = body["prompt_token_ids"], body["choices"][0]["token_ids"]
        served = [entry["logprob"] for entry in body["choices"][0]["logprobs"]["content"]]
        assert trainer_logprobs(session, prompt, completion, temperature) == pytest.approx(served, abs=1e-4)
        assert trainer_logprobs(session, prompt, completion) != pytest.approx(served, abs=1e-3)  # T matters


def start_failure(args, timeout=30):
    started = time.monotonic()
    process = subprocess.run([sys.executable, "-m", "a3r_swarm.server", *args], capture_output=True, text=True,
                             env=child_env(), timeout=timeout)
    return process.returncode, process.stderr.strip().splitlines(), time.monotonic() - started


def test_start_failures_print_one_line(server, tiny_model):
    # A server that waited for the port instead of failing would run into the timeout
    # (subprocess.TimeoutExpired fails the test); no wall-clock bound beyond that, since
    # starting Python and torch alone took 18 s on a loaded CI machine.
    rc, lines, _ = start_failure(["--model", tiny_model, "--port", str(server.port)], timeout=120)
    assert rc != 0 and lines == [f"address already in use: 127.0.0.1:{server.port}"]
    rc, lines, _ = start_failure(["--model", "/nonexistent/model", "--port", "1"])
    assert rc != 0 and lines == ["model not found: /nonexistent/model"]


def test_a_non_tiny_model_without_transformers_fails_clearly(tmp_path):
    try:
        import peft  # noqa: F401
        import transformers  # noqa: F401
        pytest.skip("transformers is installed here")
    except ImportError:
        pass
    (tmp_path / "config.json").write_text('{"model_type": "qwen2"}')
    rc, lines, _ = start_failure(["--model", str(tmp_path), "--port", "0"])
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("transformers is not installed: pip install transformers peft")
