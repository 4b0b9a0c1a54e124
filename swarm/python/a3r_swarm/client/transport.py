"""JSON over HTTP with the standard library only.

Proxies from the environment are not used (the swarm server is on a private network, and
a proxy set for the internet would swallow loopback requests), matching the TypeScript
client's fetch.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from .errors import SwarmRequestError

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def request_json(method: str, url: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                 timeout_s: float = 60.0) -> Any:
    """One request. Raises SwarmRequestError for an HTTP error status or a non-JSON answer,
    and lets connection failures (see backoff.is_connection_error) through as they are."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    all_headers = {"accept": "application/json", **(headers or {})}
    if data is not None:
        all_headers["content-type"] = "application/json"
    request = urllib.request.Request(f"{url}{path}", data=data, method=method, headers=all_headers)
    try:
        with _opener.open(request, timeout=timeout_s) as response:
            status, text = response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        raise SwarmRequestError(status, path, f"answer is not JSON: {text[:200]}") from None
    if status >= 400:
        raise SwarmRequestError(status, path, _reason(parsed, text))
    return parsed


def _reason(parsed: Any, text: str) -> str:
    """The server's own words: a3r says `error`/`failure_reason`, AgentJet-style bodies `detail`."""
    if isinstance(parsed, dict):
        for field in ("error", "failure_reason", "detail", "fail_cause"):
            value = parsed.get(field)
            if value:
                return value if isinstance(value, str) else json.dumps(value)
    return text[:500]
