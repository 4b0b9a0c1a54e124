"""The Ray side of a3r's `kind: ray` launcher (hosts/ray/ray-launcher.ts).

A long-lived driver: it connects to the cluster once (`ray.init(address=...)`, Ray core
only, no dashboard or Jobs API) and answers one JSON request per stdin line with one
`@@a3r {...}` line on stdout (Ray itself may print to stdout; only those lines are ours).

Each run is a detached, named actor (`a3r.<campaign>+<blueprint id>` in the host's
namespace) that holds the run's GPUs and CPUs while `a3r worker run` lives. The actor
starts the worker in a session of its own, so neither this driver's death nor the
actor's own (a killed Ray worker process) stops the run: Ray restarts the actor
(`max_restarts`) and the new incarnation adopts the worker still running on its node,
or, when that worker is gone too, starts a new one on the same result directory, which
re-attaches to the live trainer or resumes from its checkpoint. When the worker ends, the
actor removes itself, so its resources free at once and its name can be used again.

Every start and adoption is one line of `<run dir>/ray-starts.jsonl`.

Left out: runtime_env packaging (the nodes have a3r and a shared filesystem), placement
groups (one run is one actor on one node) and autoscaling hints.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import ray
from ray._private import state as ray_state


def _now():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="utf8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _start_ticks(pid):
    """The process's start time in clock ticks (field 22 of /proc/PID/stat): a pid reused
    later differs. None when it is gone, or a zombie: an adopted worker that ended is no
    child of ours, and where PID 1 reaps nothing (a container without an init) it stays a
    zombie, which must not read as a run still going."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf8") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


@ray.remote
class RunActor:
    """One run: supervises `a3r worker run` for as long as it lives, then removes itself."""

    def __init__(self, run_dir, command, environment):
        self.run_dir = run_dir
        self.record_path = os.path.join(run_dir, "ray-worker.json")
        self.pid = None
        self.ticks = None
        self.child = None
        self.incarnation = ray.get_runtime_context().was_current_actor_reconstructed
        finished = os.path.exists(os.path.join(run_dir, "result", "finish.flag"))
        adopted = None if finished else self._adoptable()
        if finished:
            self._note("finished-already")
        elif adopted is not None:
            self.pid, self.ticks = adopted, _start_ticks(adopted)
            self._note("adopted", worker_pid=adopted)
        else:
            self._start(command, environment)
        threading.Thread(target=self._watch, daemon=True).start()

    def _adoptable(self):
        """The pid of this run's worker when an earlier incarnation started it on this node and it still runs."""
        try:
            with open(self.record_path, encoding="utf8") as handle:
                record = json.load(handle)
        except (OSError, ValueError):
            return None
        pid = record.get("pid")
        if record.get("boot_id") != _boot_id() or record.get("hostname") != socket.gethostname() or not isinstance(pid, int):
            return None
        return pid if _start_ticks(pid) is not None and _start_ticks(pid) == record.get("start_ticks") else None

    def _start(self, command, environment):
        env = dict(os.environ)
        env.update(environment)
        # The GPUs Ray gave this actor, and none when it asked for none (not the node's all).
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(gpu) for gpu in ray.get_gpu_ids())
        with open(os.path.join(self.run_dir, "worker.log"), "ab") as log:
            self.child = subprocess.Popen(
                ["sh", "-c", "exec " + command],
                cwd=self.run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self.child.pid
        record = {"pid": self.pid, "start_ticks": _start_ticks(self.pid), "hostname": socket.gethostname(), "boot_id": _boot_id()}
        draft = f"{self.record_path}.{os.getpid()}.draft"
        with open(draft, "w", encoding="utf8") as handle:
            json.dump(record, handle)
        os.replace(draft, self.record_path)
        self._note("started", worker_pid=self.pid, gpus=env["CUDA_VISIBLE_DEVICES"])

    def _note(self, kind, **fields):
        line = {"at": _now(), "kind": kind, "actor_pid": os.getpid(), "node": socket.gethostname(), "restarted": self.incarnation, **fields}
        with open(os.path.join(self.run_dir, "ray-starts.jsonl"), "a", encoding="utf8") as handle:
            handle.write(json.dumps(line) + "\n")

    def _alive(self):
        if self.child is not None:
            return self.child.poll() is None
        return self.pid is not None and _start_ticks(self.pid) == self.ticks

    def _watch(self):
        while self._alive():
            time.sleep(0.2)
        # Gone for good: the run's GPUs free at once, and a revived run may take the name again.
        ray.kill(ray.get_runtime_context().current_actor, no_restart=True)

    def terminate(self, grace_seconds):
        """TERM to the worker's process group (it records `cancelled`), KILL after the grace."""
        if not self._alive():
            return "none"
        try:
            os.killpg(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return "none"
        deadline = time.monotonic() + grace_seconds
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._alive():
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return "signalled"


def _latest_actors(names):
    """The newest actor of each name (a finished run's dead actor may share its name with a revived one)."""
    wanted = set(names)
    found = {}
    for actor in ray_state.actors().values():
        name = actor.get("Name")
        if name not in wanted:
            continue
        if name not in found or (actor.get("StartTime") or 0) >= (found[name].get("StartTime") or 0):
            found[name] = actor
    return found


class Driver:
    def __init__(self, namespace):
        self.namespace = namespace

    def handle(self, op, request):
        return getattr(self, "op_" + op)(**request)

    def op_hello(self):
        return {"ray": ray.__version__}

    def op_launch(self, name, run_dir, command, environment, num_gpus, num_cpus, max_restarts):
        try:
            RunActor.options(
                name=name,
                namespace=self.namespace,
                lifetime="detached",
                num_gpus=num_gpus,
                num_cpus=num_cpus,
                max_restarts=max_restarts,
            ).remote(run_dir, command, environment)
        except ValueError as error:
            # Named actors are unique: another launch placed this run first.
            if "already taken" in str(error) or "already exists" in str(error):
                return "exists"
            raise
        return "created"

    def op_states(self, names):
        answer = {}
        for name, actor in _latest_actors(names).items():
            answer[name] = {
                "state": actor.get("State"),
                "restarts": actor.get("NumRestarts", 0),
                "pid": actor.get("Pid"),
                "death": str(actor.get("DeathCause") or "")[:300],
            }
        return answer

    def op_cancel(self, name, grace_seconds):
        """TERM to the run's worker through its actor. An actor being restarted (its Ray
        worker process died) is waited for, up to a minute: the worker may still run on its
        node, and only the new incarnation, which adopts it, can stop it; removing the actor
        then would leave that worker running with nobody to stop it. A terminate call lost
        with a dying incarnation is sent again to the next one."""
        deadline = time.monotonic() + 60
        sent = False
        while True:
            actor = _latest_actors([name]).get(name)
            state = actor.get("State") if actor else None
            if state is None or state == "DEAD":
                # Dead after a terminate was sent: its worker ended and the actor removed itself.
                return "signalled" if sent else "none"
            if state == "RESTARTING" and time.monotonic() < deadline:
                time.sleep(0.5)
                continue
            try:
                handle = ray.get_actor(name, namespace=self.namespace)
            except ValueError:  # gone between the two questions
                if time.monotonic() >= deadline:
                    return "signalled" if sent else "none"
                time.sleep(0.5)
                continue
            if state != "ALIVE":
                # Still waiting for resources: no worker to tell.
                ray.kill(handle, no_restart=True)
                return "removed"
            try:
                return ray.get(handle.terminate.remote(grace_seconds), timeout=grace_seconds + 30)
            except ray.exceptions.RayActorError:
                sent = True
                if time.monotonic() >= deadline:
                    return "signalled"
                time.sleep(0.5)

    def op_nodes(self):
        free = ray_state.available_resources_per_node()
        nodes = []
        for node in ray.nodes():
            resources = node.get("Resources", {})
            available = free.get(node["NodeID"], {}) if node.get("Alive") else {}
            nodes.append(
                {
                    "id": node["NodeID"][:12],
                    "address": node.get("NodeManagerAddress"),
                    "alive": bool(node.get("Alive")),
                    "cpus": resources.get("CPU", 0),
                    "gpus": resources.get("GPU", 0),
                    "free_cpus": available.get("CPU", 0),
                    "free_gpus": available.get("GPU", 0),
                }
            )
        return nodes

    def op_a3r_version(self, command):
        @ray.remote(num_cpus=0)
        def version():
            done = subprocess.run(["sh", "-c", command + " --version"], capture_output=True, text=True, timeout=60)
            return {"code": done.returncode, "output": (done.stdout + done.stderr).strip()[:300], "node": socket.gethostname()}

        return ray.get(version.remote(), timeout=120)


def main():
    address, namespace = sys.argv[1], sys.argv[2]
    # ray.init retries a dead address for a minute and more: say at once that nothing answers.
    head, port = address.rsplit(":", 1)
    try:
        socket.create_connection((head, int(port)), timeout=10).close()
    except OSError as error:
        print(f"nothing answers at {address} ({error}): is the Ray head started there (ray start --head --port {port})?", file=sys.stderr, flush=True)
        sys.exit(2)
    ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level="ERROR")
    driver = Driver(namespace)
    print("@@a3r " + json.dumps({"id": 0, "ok": True, "result": driver.op_hello()}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = {"id": request["id"], "ok": True, "result": driver.handle(request["op"], request.get("args", {}))}
        except Exception as error:  # noqa: BLE001 - every failure goes back to the launcher, named
            answer = {"id": request["id"], "ok": False, "error": f"{type(error).__name__}: {error}"[:1000]}
        print("@@a3r " + json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
