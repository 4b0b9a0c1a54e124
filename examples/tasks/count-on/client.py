"""A standalone swarm client for the count-on task in Python, written the way any agent
author would: the a3r_swarm.client SDK for episodes, its standard-library chat for the
model (or the `openai` package, when installed, through `episode.openai()`).

    /usr/bin/python3 examples/tasks/count-on/client.py [server-url] [episodes] [concurrency]

against a server started with this folder's swarm.yaml. Each episode: claim (waits while
the server is not ROLLING) -> play two turns with the episode's own base URL and key ->
end with the reward; an error aborts the episode (the `with` block), so the server never
waits for an episode that will not finish. Stops early when training has finished.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2] / "swarm" / "python"))

from a3r_swarm.client import SwarmClient, SwarmFinishedError  # noqa: E402
from count_on import play_episode, sample_task  # noqa: E402

NUM_REPEAT = 4  # keep equal to the server's num_repeat so GRPO groups fill


@dataclass
class RunSummary:
    episodes: int = 0
    reward_sum: float = 0.0
    aborted: int = 0
    finished: bool = False
    errors: list[str] = field(default_factory=list)


def run(url: str, episodes: int, concurrency: int, num_repeat: int = NUM_REPEAT) -> RunSummary:
    client = SwarmClient(url)
    summary = RunSummary()
    lock = threading.Lock()
    counter = iter(range(episodes))

    def lane() -> None:
        while True:
            with lock:
                index = next(counter, None)
            if index is None:
                return
            task = sample_task(index // num_repeat)
            try:
                with client.episode(task.task_id, discard_episode_timeout=120) as episode:
                    outcome = play_episode(
                        task,
                        lambda messages, max_tokens: episode.chat.text(messages, max_tokens=max_tokens),
                        lambda: client.can_continue(episode.episode_uuid),
                    )
                    client.end_episode(task.task_id, episode.episode_uuid, reward=outcome.reward,
                                       is_success=outcome.is_success,
                                       log_metrics={"first_turn_right": float(outcome.correct[0])})
            except SwarmFinishedError:
                with lock:
                    summary.finished = True
                return
            except Exception as error:  # noqa: BLE001 - one failed episode must not stop the lane
                with lock:
                    summary.aborted += 1
                    summary.errors.append(f"episode {index}: {error}")
                continue
            with lock:
                summary.episodes += 1
                summary.reward_sum += outcome.reward

    lanes = [threading.Thread(target=lane, name=f"count-on-{number}") for number in range(concurrency)]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join()
    return summary


def main(argv: list[str]) -> int:
    url = argv[1] if len(argv) > 1 else "http://127.0.0.1:10088"  # the port in swarm.yaml
    episodes = int(argv[2]) if len(argv) > 2 else 400
    concurrency = int(argv[3]) if len(argv) > 3 else 8
    summary = run(url, episodes, concurrency)
    mean = summary.reward_sum / max(1, summary.episodes)
    print(f"count-on: {summary.episodes} episodes, reward mean {mean:.3f}, {summary.aborted} aborted"
          f"{', training finished' if summary.finished else ''}")
    for line in summary.errors[:5]:
        print(f"  {line}", file=sys.stderr)
    return 0 if summary.episodes > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
