"""Run a command that does not watch its parent, and stop it when the parent is gone.

`vllm serve` (or any inference command a swarm.yaml names) knows nothing of the swarm
server that started it: after a SIGKILL or an OOM kill of that server it would keep its
GPU memory and port with nobody to talk to. The vllm engine therefore starts such a
command as ``python -m a3r_swarm.watchdog -- <command...>``: this process runs it as its
child (in the same process group, so a stop of the group reaches both), passes on TERM
and INT, exits with the child's code, and stops the child (TERM, then KILL after a grace)
within about a second of the process named by A3R_PARENT_PID going away.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from a3r_swarm.parent_watch import parent_gone

GRACE_S = 10.0
POLL_S = 0.5


def stop(child: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> int:
    if child.poll() is None:
        child.terminate()
        try:
            return child.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            child.kill()
    return child.wait()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("usage: python -m a3r_swarm.watchdog -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    raw = os.environ.get("A3R_PARENT_PID", "")
    parent = int(raw) if raw.isdigit() else None
    try:
        # A child that watches its own parent (a3r's reference server) now watches this one.
        child = subprocess.Popen(argv, env=dict(os.environ, A3R_PARENT_PID=str(os.getpid())))
    except OSError as error:
        print(f"a3r watchdog: cannot start {argv[0]}: {error}", file=sys.stderr)
        return 127
    for name in ("SIGTERM", "SIGINT"):
        signal.signal(getattr(signal, name), lambda number, _frame: child.send_signal(number))
    while True:
        code = child.poll()
        if code is not None:
            return code if code >= 0 else 128 - code
        if parent is not None and parent_gone(parent):
            print(f"a3r watchdog: the process that started {argv[0]} (pid {parent}) is gone; stopping it", file=sys.stderr, flush=True)
            stop(child)
            return 1
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
