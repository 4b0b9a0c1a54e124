"""a3r swarm client SDK for Python (standard library only; `openai` used when installed).

    from a3r_swarm.client import SwarmClient, SwarmFinishedError

    client = SwarmClient("http://127.0.0.1:10086")
    with client.episode("sky") as episode:
        answer = episode.chat.text([{"role": "user", "content": "What colour is the sky?"}])
        client.end_episode("sky", episode.episode_uuid, reward=1.0 if answer.startswith("blue") else 0.0)

The surface mirrors swarm/client/swarm-client.ts; see swarm/python/README.md.
"""

from .backoff import backoff_delay, is_connection_error
from .chat import EpisodeChat
from .errors import (
    SwarmClaimTimeout,
    SwarmEngineFailedError,
    SwarmFinishedError,
    SwarmRequestError,
    SwarmUnreachableError,
    SwarmWaitCancelled,
)
from .swarm_client import EpisodeHandle, SwarmClient

__all__ = [
    "EpisodeChat",
    "EpisodeHandle",
    "SwarmClaimTimeout",
    "SwarmClient",
    "SwarmEngineFailedError",
    "SwarmFinishedError",
    "SwarmRequestError",
    "SwarmUnreachableError",
    "SwarmWaitCancelled",
    "backoff_delay",
    "is_connection_error",
]
