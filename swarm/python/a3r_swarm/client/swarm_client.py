"""The Python swarm client: the same surface as the TypeScript SDK (swarm/client/swarm-client.ts).

Claim episodes, end them with a reward, abort, ask whether one may continue, agree to
sync, read the status, and drive the engine (config, start, stop, checkpoints). It speaks
AgentJet's protocol (swarm/PROTOCOL.md) and sends each episode's own key as a Bearer
token on end and abort (PROTOCOL.md section 7), so it works on servers that require it.

The key is kept (in a bounded map) after the end, so a late end or a repeated abort gets
the server's real answer (400 already ended, or the idempotent abort) instead of 401.

It survives server restarts: connection errors and 502/503/504 are retried with capped
exponential backoff for `retry_for_s` (default two minutes); `begin_episode` waits as
long as it is allowed to while the engine is not ROLLING. A refusal (4xx) is never
retried: it raises SwarmRequestError with the server's reason. `status()` never raises
for an unreachable server: it reads as ENGINE.CANNOT_CONNECT. Thread-safe: one client
may serve many worker threads.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator

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
from .transport import request_json

_FINISHED = re.compile(r"^ENGINE\.OFFLINE: finished")
_FAILED = "ENGINE.OFFLINE: failed: "
_RETRYABLE_STATUSES = (502, 503, 504)
# Episodes the server reclaimed are never ended here: the key map stays bounded.
_MAX_REMEMBERED_KEYS = 10_000


@dataclass(frozen=True)
class EpisodeHandle:
    """A claimed episode: an OpenAI base URL (ends in /v1) and a key valid for it only."""

    episode_uuid: str
    base_url: str
    api_key: str = field(repr=False)
    timeout_s: float = 300.0

    @property
    def chat(self) -> EpisodeChat:
        """Chat completions with the standard library (no `openai` package needed)."""
        return EpisodeChat(self.base_url, self.api_key, self.timeout_s)

    def openai(self, **options: Any) -> Any:
        """An `openai.OpenAI` client for this episode, when the package is installed."""
        try:
            import openai  # noqa: PLC0415 - optional dependency, imported only when asked for
        except ImportError:
            raise ImportError("the openai package is not installed: pip install openai "
                              "(or use EpisodeHandle.chat, which needs only the standard library)") from None
        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key, **options)


class SwarmClient:
    def __init__(self, url: str, *, client_uuid: str | None = None, admin_token: str | None = None,
                 backoff_initial_s: float = 0.05, backoff_max_s: float = 2.0, retry_for_s: float = 120.0,
                 request_timeout_s: float = 60.0):
        self.url = url.rstrip("/")
        self.client_uuid = client_uuid or str(uuid.uuid4())
        # Claims need it on a server with a token; a worker hands it over in the environment.
        self._admin_token = admin_token or os.environ.get("A3R_SWARM_ADMIN_TOKEN") or None
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._retry_for_s = retry_for_s
        self._timeout_s = request_timeout_s
        # episode uuid -> (its key, still open here)
        self._episode_keys: OrderedDict[str, tuple[str, bool]] = OrderedDict()
        self._keys_lock = threading.Lock()

    # ---- episodes -----------------------------------------------------------------------

    def begin_episode(self, *, episode_type: str = "train", discard_episode_timeout: float = 600,
                      max_wait_s: float | None = None, stop: threading.Event | None = None) -> EpisodeHandle:
        """Claims an episode, waiting (capped backoff) while the engine is not ROLLING, the
        concurrency cap (global, or this client's own: a 429) is reached, or the server is
        unreachable. Raises SwarmFinishedError when training has finished,
        SwarmEngineFailedError when the engine failed and is OFFLINE for good,
        SwarmClaimTimeout past `max_wait_s`, SwarmWaitCancelled when `stop` is set."""
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                answer = self._once("POST", "/claim_episode", {
                    "client_uuid": self.client_uuid,
                    "episode_type": episode_type,
                    "discard_episode_timeout": discard_episode_timeout,
                }, "admin")
                if answer.get("success") is True:
                    handle = EpisodeHandle(str(answer["episode_uuid"]), str(answer["openai_base_url"]),
                                           str(answer["openai_api_key"]), self._timeout_s)
                    self._remember_key(handle)
                    return handle
                cause: Any = str(answer.get("fail_cause") or "claim refused")
                if cause.startswith(_FAILED):
                    raise SwarmEngineFailedError(cause.removeprefix(_FAILED))
                if _FINISHED.match(cause):
                    raise SwarmFinishedError(cause.removeprefix("ENGINE.OFFLINE: ").split(";")[0])
            except Exception as error:  # noqa: BLE001 - only outages are retried, the rest re-raised
                # 429: this client holds max_claims_per_client episodes; one of its own will end.
                capped = isinstance(error, SwarmRequestError) and error.status == 429
                if not is_connection_error(error) and not capped:
                    raise
                cause = error
            if max_wait_s is not None and time.monotonic() - started > max_wait_s:
                raise SwarmClaimTimeout(f"claim_episode: no episode within {max_wait_s} s ({cause})")
            delay = backoff_delay(attempt, *self._backoff)
            attempt += 1
            if stop is not None:
                if stop.wait(delay):
                    raise SwarmWaitCancelled(f"claim_episode: stopped while waiting ({cause})")
            else:
                time.sleep(delay)

    def end_episode(self, task_id: str, episode_uuid: str, *, reward: float | None, is_success: bool | None = None,
                    metadata: dict[str, Any] | None = None, log_metrics: dict[str, float] | None = None) -> None:
        """Ends a claimed episode with its reward. `reward=None` (AgentJet's WorkflowOutput
        default) ends it without one: recorded, never trained on, where the server accepts it."""
        workflow_output: dict[str, Any] = {"reward": reward, "metadata": {**(metadata or {}), "task_id": task_id}}
        if is_success is not None:
            workflow_output["is_success"] = is_success
        if log_metrics:
            workflow_output["log_metrics"] = log_metrics
        self._call("POST", "/end_episode", {
            "client_uuid": self.client_uuid,
            "episode_uuid": episode_uuid,
            "task_id": task_id,
            "workflow_output": workflow_output,
        }, self._episode_auth(episode_uuid))
        self._mark_closed(episode_uuid)

    def abort_episode(self, episode_uuid: str, task_id: str = "") -> None:
        self._call("POST", "/abort_episode", {"client_uuid": self.client_uuid, "episode_uuid": episode_uuid,
                                              "task_id": task_id}, self._episode_auth(episode_uuid))
        self._mark_closed(episode_uuid)

    def can_continue(self, episode_uuid: str) -> bool:
        answer = self._call("POST", "/can_continue_episode", {"client_uuid": self.client_uuid, "episode_uuid": episode_uuid})
        return answer.get("can_continue") is True

    @contextlib.contextmanager
    def episode(self, task_id: str, **begin_options: Any) -> Iterator[EpisodeHandle]:
        """`with client.episode(task_id) as handle:` claims, and aborts the episode if the
        block raises before `end_episode` (so the server never waits for it)."""
        handle = self.begin_episode(**begin_options)
        try:
            yield handle
        except BaseException:
            if self._is_open(handle.episode_uuid):
                with contextlib.suppress(Exception):
                    self.abort_episode(handle.episode_uuid, task_id)
            raise

    def agree_sync_weight(self) -> None:
        """Agrees to train now (C4, C5). Raises SwarmRequestError (400, with the reason) when
        the agreement could not lead to a step: outside ROLLING, before this client ended a
        rewarded episode, or on an empty pool (PROTOCOL.md section 2)."""
        self._call("POST", "/agree_sync_weight", {"client_uuid": self.client_uuid})

    # ---- engine control (admin token when the server has one) ----------------------------

    def sync_train_config(self, yaml_text: str) -> None:
        self._call("POST", "/sync_train_config", {"yaml_as_string": yaml_text}, "admin")

    def start(self) -> None:
        self._call("POST", "/start_engine", {}, "admin")

    def stop(self) -> None:
        self._call("POST", "/stop_engine", {}, "admin")

    def restart(self) -> None:
        self.stop()
        self.start()

    def save_checkpoint(self) -> str:
        return str(self._call("POST", "/save_checkpoint", {}, "admin")["path"])

    def resume_from_checkpoint(self, path: str | None = None) -> None:
        self._call("POST", "/resume_from_checkpoint", {"path": path} if path else {}, "admin")

    # ---- monitoring ----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """`{engine_status, engine_status_detail, global_step, ...}`; never raises for an
        unreachable server (ENGINE.CANNOT_CONNECT, global_step -1)."""
        try:
            return self._once("GET", "/get_engine_status")
        except Exception as error:  # noqa: BLE001
            if not is_connection_error(error):
                raise
            return {"engine_status": "ENGINE.CANNOT_CONNECT", "engine_status_detail": str(error), "global_step": -1}

    def pool_information(self) -> dict[str, Any]:
        return self._call("GET", "/get_current_batch_rollout_pool_information", None, "admin")

    def metrics(self) -> list[dict[str, float]]:
        return self._call("GET", "/metrics")

    def episode_buffer(self) -> list[dict[str, Any]]:
        """This client's episodes (the server knows the caller by one of its episode keys),
        or every episode with the admin token."""
        with self._keys_lock:
            key = next(reversed(self._episode_keys.values()), None)
        auth: str | dict[str, str] = "admin" if self._admin_token or key is None else {"authorization": f"Bearer {key[0]}"}
        return self._call("POST", "/get_episode_buffer", {"client_uuid": self.client_uuid}, auth)["buffer"]

    # ---- plumbing ------------------------------------------------------------------------

    def _remember_key(self, handle: EpisodeHandle) -> None:
        with self._keys_lock:
            self._episode_keys[handle.episode_uuid] = (handle.api_key, True)
            while len(self._episode_keys) > _MAX_REMEMBERED_KEYS:
                self._episode_keys.popitem(last=False)

    def _mark_closed(self, episode_uuid: str) -> None:
        with self._keys_lock:
            known = self._episode_keys.get(episode_uuid)
            if known is not None:
                self._episode_keys[episode_uuid] = (known[0], False)

    def _is_open(self, episode_uuid: str) -> bool:
        with self._keys_lock:
            known = self._episode_keys.get(episode_uuid)
            return known is not None and known[1]

    def _episode_auth(self, episode_uuid: str) -> dict[str, str]:
        """The episode's own key proves the end or abort comes from its claimant."""
        with self._keys_lock:
            known = self._episode_keys.get(episode_uuid)
        return {"authorization": f"Bearer {known[0]}"} if known is not None else {}

    def _call(self, method: str, path: str, body: Any = None, auth: str | dict[str, str] | None = None) -> Any:
        """One request, retried on connection errors and 502/503/504 for `retry_for_s`."""
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                return self._once(method, path, body, auth)
            except Exception as error:  # noqa: BLE001
                retryable = is_connection_error(error) or (
                    isinstance(error, SwarmRequestError) and error.status in _RETRYABLE_STATUSES)
                if not retryable:
                    raise
                waited = time.monotonic() - started
                if waited > self._retry_for_s:
                    raise SwarmUnreachableError(self.url, waited, error) from error
            time.sleep(backoff_delay(attempt, *self._backoff))
            attempt += 1

    def _once(self, method: str, path: str, body: Any = None, auth: str | dict[str, str] | None = None) -> Any:
        headers: dict[str, str] = {}
        if auth == "admin" and self._admin_token:
            headers["x-admin-token"] = self._admin_token
        elif isinstance(auth, dict):
            headers.update(auth)
        return request_json(method, self.url, path, body, headers, self._timeout_s)
