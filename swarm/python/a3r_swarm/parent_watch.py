"""Exit when the process that started us is gone.

The vllm engine starts the reference server in its own process group (so a stop reaches
all of it) and sets A3R_PARENT_PID. Should the swarm server die without stopping it (a
SIGKILL, an OOM kill), the server would otherwise keep its port and memory with nobody to
talk to; this thread notices the parent is gone within a second and stops the process.
The trainer needs no such watch: its stdin closes with the parent and it exits on EOF.
"""

from __future__ import annotations

import os
import signal
import threading
import time


def parent_gone(parent: int) -> bool:
    """True once `parent` is no longer this process's parent, or no longer exists."""
    if os.getppid() != parent:
        return True
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def watch_parent(interval_s: float = 1.0) -> None:
    raw = os.environ.get("A3R_PARENT_PID", "")
    if not raw.isdigit():
        return
    parent = int(raw)

    def loop() -> None:
        while not parent_gone(parent):
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=loop, name="a3r-parent-watch", daemon=True).start()
