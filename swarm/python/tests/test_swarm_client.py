"""The Python client SDK against a real `a3r swarm serve` (embedded engine, free port)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import pytest

from a3r_swarm.client import (
    SwarmClaimTimeout,
    SwarmClient,
    SwarmRequestError,
    SwarmUnreachableError,
    SwarmWaitCancelled,
    backoff_delay,
)

# require_episode_key: ends and aborts must carry the episode's own key (PROTOCOL.md 7).
CONFIG = """
model: { kind: embedded, seed: 3 }
train_batch_size: 8
num_repeat: 2
save_freq: 0
experiment_dir: ./experiment
require_episode_key: true
sampling: { temperature: 1, top_p: 1, max_tokens: 4 }
"""


@pytest.fixture(scope="module")
def server(swarm_server):
    return swarm_server(CONFIG)


@pytest.fixture
def client(server):
    return SwarmClient(server.url, backoff_initial_s=0.02, backoff_max_s=0.2, retry_for_s=10)


def raw_post(url: str, body: dict, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def completed(client: SwarmClient) -> int:
    return client.pool_information()["completed_episodes"]


def test_status_reads_the_engine_and_an_unreachable_server_without_raising(client):
    status = client.status()
    assert status["engine_status"] == "ENGINE.ROLLING"
    assert status["global_step"] == 0
    gone = SwarmClient(f"http://127.0.0.1:{free_port()}").status()
    assert gone["engine_status"] == "ENGINE.CANNOT_CONNECT"
    assert gone["global_step"] == -1


def test_an_episode_claims_chats_over_two_turns_and_ends_with_its_reward(client):
    episode = client.begin_episode(discard_episode_timeout=60)
    assert episode.base_url.endswith("/v1")
    assert episode.api_key not in repr(episode)
    history = [{"role": "system", "content": "You count."}, {"role": "user", "content": "one two"}]
    first = episode.chat.text(history, max_tokens=3)
    assert isinstance(first, str)
    history += [{"role": "assistant", "content": first}, {"role": "user", "content": "three"}]
    answer = episode.chat.create(history, max_tokens=3, agent_name="counter")
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert client.can_continue(episode.episode_uuid) is True
    assert episode.episode_uuid in [item["episode_uuid"] for item in client.episode_buffer()]

    before = completed(client)
    client.end_episode("count-1", episode.episode_uuid, reward=0.5, is_success=False, log_metrics={"turns": 2})
    assert client.can_continue(episode.episode_uuid) is False
    assert completed(client) == before + 1


def test_end_and_abort_carry_the_episode_key_the_server_requires(client, server):
    episode = client.begin_episode(discard_episode_timeout=60)
    body = {"client_uuid": client.client_uuid, "episode_uuid": episode.episode_uuid, "task_id": "key",
            "workflow_output": {"reward": 1, "metadata": {"task_id": "key"}}}
    assert raw_post(f"{server.url}/end_episode", body)[0] == 401
    other = client.begin_episode(discard_episode_timeout=60)
    assert raw_post(f"{server.url}/end_episode", body, {"authorization": f"Bearer {other.api_key}"})[0] == 403
    # The SDK sends the right key, so the same end goes through.
    before = completed(client)
    client.end_episode("key", episode.episode_uuid, reward=1.0)
    assert completed(client) == before + 1
    client.abort_episode(other.episode_uuid, "key")
    assert client.can_continue(other.episode_uuid) is False


def test_a_refusal_is_raised_at_once_with_the_servers_reason(client):
    episode = client.begin_episode(discard_episode_timeout=60)
    client.abort_episode(episode.episode_uuid)
    client.abort_episode(episode.episode_uuid)  # idempotent: the kept key still proves the claim
    with pytest.raises(SwarmRequestError) as refused:
        client.end_episode("late", episode.episode_uuid, reward=1.0)
    assert refused.value.status == 400  # AgentJet's code for an episode that is no longer claimed
    assert episode.episode_uuid in str(refused.value) and "aborted" in str(refused.value)
    assert client.can_continue("not-a-claimed-episode") is False
    with pytest.raises(SwarmRequestError) as unknown:
        client.end_episode("t", "not-a-claimed-episode", reward=1.0)
    assert 400 <= unknown.value.status < 500


def test_the_episode_context_aborts_when_the_agent_fails(client):
    before = completed(client)
    with pytest.raises(ValueError, match="the environment broke"):
        with client.episode("ctx", discard_episode_timeout=60) as episode:
            assert client.can_continue(episode.episode_uuid) is True
            raise ValueError("the environment broke")
    assert client.can_continue(episode.episode_uuid) is False
    assert completed(client) == before
    # Ended inside the block: nothing left to abort, the end stands.
    with client.episode("ctx", discard_episode_timeout=60) as episode:
        client.end_episode("ctx", episode.episode_uuid, reward=0.0)
    assert completed(client) == before + 1


def test_begin_episode_backs_off_while_the_engine_is_not_rolling(client):
    client.stop()
    try:
        assert client.status()["engine_status"] == "ENGINE.OFFLINE"
        with pytest.raises(SwarmClaimTimeout, match="ENGINE.OFFLINE"):
            client.begin_episode(max_wait_s=0.3)

        stop = threading.Event()
        outcome: dict[str, object] = {}

        def wait_for_claim(key: str, event: threading.Event | None) -> None:
            try:
                outcome[key] = client.begin_episode(discard_episode_timeout=60, stop=event)
            except Exception as error:  # noqa: BLE001 - the test inspects it
                outcome[key] = error

        cancelled = threading.Thread(target=wait_for_claim, args=("cancelled", stop))
        cancelled.start()
        stop.set()
        cancelled.join(30)
        assert isinstance(outcome["cancelled"], SwarmWaitCancelled)

        waiting = threading.Thread(target=wait_for_claim, args=("claimed", None))
        waiting.start()
    finally:
        client.start()
    waiting.join(30)
    claimed = outcome["claimed"]
    assert not isinstance(claimed, Exception), claimed
    client.abort_episode(claimed.episode_uuid)


def test_an_unreachable_server_is_retried_then_reported():
    client = SwarmClient(f"http://127.0.0.1:{free_port()}", backoff_initial_s=0.01, backoff_max_s=0.05, retry_for_s=0.3)
    with pytest.raises(SwarmUnreachableError, match="unreachable"):
        client.end_episode("t", "00000000-0000-0000-0000-000000000000", reward=0.0)


def test_backoff_grows_to_its_cap_with_jitter():
    assert backoff_delay(0, 0.05, 2.0, random=lambda: 1.0) == pytest.approx(0.05)
    assert backoff_delay(0, 0.05, 2.0, random=lambda: 0.0) == pytest.approx(0.025)
    assert backoff_delay(3, 0.05, 2.0, random=lambda: 1.0) == pytest.approx(0.4)
    assert backoff_delay(60, 0.05, 2.0, random=lambda: 1.0) == pytest.approx(2.0)


def test_the_openai_client_is_optional(client):
    episode = client.begin_episode(discard_episode_timeout=60)
    try:
        import openai  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install openai"):
            episode.openai()
    else:
        answer = episode.openai().chat.completions.create(model="policy", messages=[{"role": "user", "content": "one"}])
        assert answer.choices[0].message.role == "assistant"
    client.abort_episode(episode.episode_uuid)
