"""Capped exponential backoff with jitter, and what counts as "the server is not there"."""

from __future__ import annotations

import errno
import http.client
import random as _random
import socket
import urllib.error
from typing import Callable


def backoff_delay(attempt: int, initial_s: float, max_s: float, random: Callable[[], float] = _random.random) -> float:
    """Seconds to wait before retry `attempt` (0 waits about `initial_s`)."""
    base = min(max_s, initial_s * 2 ** min(attempt, 30))
    # Jitter in [0.5, 1.0] x base so a fleet of clients does not retry in lockstep.
    return base * (0.5 + random() / 2)


_CONNECTION_ERRORS = (
    ConnectionError,  # refused, reset, aborted, broken pipe
    TimeoutError,
    socket.timeout,
    socket.gaierror,
    http.client.RemoteDisconnected,
    http.client.IncompleteRead,
)


_UNREACHABLE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT, errno.ECONNREFUSED}


def is_connection_error(error: BaseException) -> bool:
    """True for failures worth retrying because nobody answered (not because somebody refused)."""
    if isinstance(error, urllib.error.HTTPError):
        return False
    if isinstance(error, urllib.error.URLError):
        # urllib wraps the socket's own error; a string reason (a bad URL) is no outage.
        return isinstance(error.reason, BaseException) and is_connection_error(error.reason)
    if isinstance(error, _CONNECTION_ERRORS):
        return True
    return isinstance(error, OSError) and error.errno in _UNREACHABLE
