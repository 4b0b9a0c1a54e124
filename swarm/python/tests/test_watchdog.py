"""The watchdog stops a command that does not watch its parent once that parent is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

PYTHON_ROOT = Path(__file__).resolve().parents[1]


def env_with_path() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PYTHON_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (already dead, not yet reaped) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_passes_the_exit_code_through() -> None:
    done = subprocess.run([sys.executable, "-m", "a3r_swarm.watchdog", "--", sys.executable, "-c", "raise SystemExit(7)"], env=env_with_path(), timeout=30)
    assert done.returncode == 7


def test_stops_the_command_when_its_parent_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    # A stand-in for the swarm server: it starts the watchdog around a command that never
    # looks at its parent (sleep), records the command's pid, and waits.
    parent_code = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        env = dict(os.environ, A3R_PARENT_PID=str(os.getpid()))
        watchdog = subprocess.Popen([sys.executable, "-m", "a3r_swarm.watchdog", "--", sys.executable, "-c",
            "import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"], env=env)
        time.sleep(120)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], env=env_with_path(), start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or pid_file.read_text() == "":
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        command = int(pid_file.read_text())
        assert alive(command)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 20
        while alive(command):
            assert time.monotonic() < deadline, "the command outlived its parent"
            time.sleep(0.1)
    finally:
        try:
            os.killpg(parent.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
