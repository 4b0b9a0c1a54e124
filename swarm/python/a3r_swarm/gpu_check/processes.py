"""Starting and talking to the trainer and reference-server subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # swarm/python, for PYTHONPATH


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _drain(stream, tail: deque, echo: bool) -> None:
    for line in stream:
        tail.append(line)
        if echo:
            sys.stderr.write(line)


class TrainerProcess:
    """`python -m a3r_swarm.trainer` with request/answer over its stdin/stdout."""

    def __init__(self, python: str = sys.executable, echo_stderr: bool = False):
        self.process = subprocess.Popen([python, "-m", "a3r_swarm.trainer"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        self.stderr_tail: deque[str] = deque(maxlen=50)
        threading.Thread(target=_drain, args=(self.process.stderr, self.stderr_tail, echo_stderr), daemon=True).start()
        self.ready = self._read()
        self._next_id = 0

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"trainer exited (rc {self.process.poll()}): {''.join(self.stderr_tail)}")
        return json.loads(line)

    def send_raw(self, line: str) -> dict:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self._read()

    def request(self, op: str, **fields) -> dict:
        """The whole answer ({id, ok, result|error})."""
        self._next_id += 1
        return self.send_raw(json.dumps({"id": self._next_id, "op": op, **fields}))

    def call(self, op: str, **fields) -> dict:
        """The result, or RuntimeError with the error."""
        answer = self.request(op, **fields)
        if not answer.get("ok"):
            raise RuntimeError(f"trainer {op} failed: {answer.get('error')}")
        return answer["result"]

    def close(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            try:
                self.request("shutdown")
            except (RuntimeError, BrokenPipeError, ValueError):
                pass
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


class ServerProcess:
    """`python -m a3r_swarm.server`, waited on until /health answers."""

    def __init__(self, model: str, *, python: str = sys.executable, device: str = "auto", port: int | None = None,
                 served_name: str = "policy", extra: list[str] | None = None, echo_stderr: bool = False,
                 start_timeout: float = 600):  # loading transformers on a loaded 2-core machine takes minutes
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [python, "-m", "a3r_swarm.server", "--model", model, "--port", str(self.port),
                   "--served-model-name", served_name, "--device", device, "--enable-lora", *(extra or [])]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                        env=child_env())
        self.stderr_tail: deque[str] = deque(maxlen=50)
        threading.Thread(target=_drain, args=(self.process.stderr, self.stderr_tail, echo_stderr), daemon=True).start()
        deadline = time.monotonic() + start_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited (rc {self.process.returncode}): {''.join(self.stderr_tail)}")
            try:
                if http_json("GET", f"{self.url}/health", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"server not healthy after {start_timeout}s: {''.join(self.stderr_tail)}")
            time.sleep(0.1)

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()


def http_json(method: str, url: str, body=None, timeout: float = 300, raw: bytes | None = None) -> tuple[int, dict]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        payload = error.read()
        try:
            return error.code, json.loads(payload or b"{}")
        except ValueError:
            return error.code, {"raw": payload.decode(errors="replace")}
