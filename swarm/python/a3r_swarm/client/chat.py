"""Chat completions for one episode with the standard library: what an agent needs when
the `openai` package is not installed (EpisodeHandle.openai() gives that client instead)."""

from __future__ import annotations

from typing import Any

from .transport import request_json


class EpisodeChat:
    def __init__(self, base_url: str, api_key: str, timeout_s: float):
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout_s = timeout_s

    def create(self, messages: list[dict[str, Any]], *, model: str = "policy", agent_name: str | None = None,
               **fields: Any) -> dict[str, Any]:
        """POST /v1/chat/completions; `fields` go into the body as given (max_tokens,
        temperature, tools, ...). `agent_name` sets `x-swarm-agent-name` (multi-agent
        episodes: see swarm/tracking/MERGE.md)."""
        headers = {"authorization": f"Bearer {self._api_key}"}
        if agent_name:
            headers["x-swarm-agent-name"] = agent_name
        return request_json("POST", self._base_url, "/chat/completions", {"model": model, "messages": messages, **fields},
                            headers, self._timeout_s)

    def text(self, messages: list[dict[str, Any]], **options: Any) -> str:
        """The assistant's answer text of one completion ("" when the policy said nothing)."""
        answer = self.create(messages, **options)
        choices = answer.get("choices") or [{}]
        return (choices[0].get("message") or {}).get("content") or ""
