"""The errors of the swarm client: a refusal, the end of training, an unreachable server."""

from __future__ import annotations


class SwarmRequestError(Exception):
    """The server refused a request (4xx, or 5xx past the retries): never retried."""

    def __init__(self, status: int, endpoint: str, message: str):
        super().__init__(f"{endpoint}: {message} (HTTP {status})")
        self.status = status
        self.endpoint = endpoint
        self.reason = message


class SwarmFinishedError(Exception):
    """The server stopped training for good (max_steps reached): no more episodes to serve."""

    def __init__(self, detail: str):
        super().__init__(f"training has finished: {detail}")
        self.detail = detail


class SwarmEngineFailedError(Exception):
    """The server's engine failed (boot or training step) and is OFFLINE: it will not roll
    again unless someone calls start_engine or resume_from_checkpoint, so waiting is futile."""

    def __init__(self, detail: str):
        super().__init__(f"the swarm server's engine failed: {detail}")
        self.detail = detail


class SwarmUnreachableError(Exception):
    """The server could not be reached for as long as the client was allowed to retry."""

    def __init__(self, url: str, waited_s: float, cause: BaseException | str):
        super().__init__(f"swarm server at {url} unreachable for {round(waited_s)} s ({cause})")
        self.url = url
        self.cause = cause


class SwarmWaitCancelled(Exception):
    """`begin_episode` was asked to stop waiting (its `stop` event was set)."""


class SwarmClaimTimeout(Exception):
    """`begin_episode` found no episode within its `max_wait_s`; the message names the last cause."""
