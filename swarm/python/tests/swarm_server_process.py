"""Starts a real `a3r swarm serve` (node bin/a3r.js) on a free port for the client tests,
the way swarm/server/server-process.test-support.ts does for the TypeScript ones."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CLI = REPO / "bin" / "a3r.js"
_READY = re.compile(r"swarm server ready on (http://\S+)")


class ServerProcess:
    def __init__(self, directory: Path, config_text: str, timeout_s: float = 60.0):
        node = os.environ.get("A3R_NODE") or shutil.which("node")
        if not node:
            raise RuntimeError("node is not on PATH (set A3R_NODE to the node binary): the client tests need a real swarm server")
        config = directory / "swarm.yaml"
        config.write_text(config_text)
        self.process = subprocess.Popen(
            [node, str(CLI), "swarm", "serve", "--config", str(config), "--port", "0"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "A3R_LOG_LEVEL": os.environ.get("A3R_LOG_LEVEL", "warn"), "NO_COLOR": "1"},
        )
        self._lines: list[str] = []
        self._ready = threading.Event()
        self.url = ""
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.05):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"swarm server did not become ready (exit {self.process.returncode}):\n{self.output()}")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.append(line)
            match = _READY.search(line)
            if match and not self._ready.is_set():
                self.url = match.group(1)
                self._ready.set()

    def wait_until_rolling(self, timeout_s: float = 60.0) -> None:
        """The ready line comes while the engine boots; episodes are served once it rolls."""
        from a3r_swarm.client import SwarmClient

        client = SwarmClient(self.url)
        deadline = time.monotonic() + timeout_s
        while (state := client.status()["engine_status"]) != "ENGINE.ROLLING":
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"swarm server stayed {state}:\n{self.output()}")
            time.sleep(0.05)

    def output(self) -> str:
        return "".join(self._lines)

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
