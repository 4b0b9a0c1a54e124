import type { HostConfig } from "../hosts-config.ts";
import { parseProbe, probeLocally, probeScript } from "../check/host-probe.ts";
import type { Launcher } from "../launcher.ts";
import type { HostCapacity } from "./scheduler.ts";
import { SshLauncher } from "../ssh/ssh-launcher.ts";
import { SlurmLauncher } from "../slurm/slurm-launcher.ts";

/**
 * A host's slots for the scheduler: its GPU indices (counted by nvidia-smi when hosts.yaml
 * says `detect`, none found = a CPU-only host) and its most concurrent runs (`max_runs`,
 * default one per GPU, at least one).
 *
 * A slurm host is what its partition reports (`sinfo`: GPUs through Gres on nodes that are
 * up, CPUs for CPU-only runs), not a fixed count: Slurm enforces the GPUs and queues
 * whatever does not fit, so its slots only keep a stage from flooding the queue.
 *
 * Left out: GPUs that exist but are busy with work a3r did not start.
 */
export async function resolveCapacity(host: HostConfig, launcher: Launcher): Promise<HostCapacity> {
  if (host.kind === "slurm") {
    if (!(launcher instanceof SlurmLauncher)) throw new Error(`host ${host.name} is a slurm host but its launcher is ${launcher.kind}`);
    const reported = await launcher.capacity();
    const cpuRuns = Math.floor(reported.cpus / (host.cpus_per_run ?? 1));
    return {
      name: host.name,
      gpuIndices: Array.from({ length: reported.gpus }, (_, index) => index),
      maxRuns: host.max_runs ?? Math.max(reported.gpus, cpuRuns, 1),
    };
  }
  let gpuCount: number;
  if (host.kind === "queue" || host.gpus !== "detect") {
    gpuCount = host.gpus as number;
  } else if (host.kind === "local") {
    gpuCount = (await probeLocally(host.a3r, host.workdir)).gpus.length;
  } else if (launcher instanceof SshLauncher) {
    const result = await launcher.connection.exec(probeScript(host.a3r, host.workdir), { idempotent: true, timeoutMs: 120_000 });
    gpuCount = parseProbe(result.stdout).gpus.length;
  } else {
    gpuCount = 0;
  }
  return {
    name: host.name,
    gpuIndices: Array.from({ length: gpuCount }, (_, index) => index),
    maxRuns: host.max_runs ?? Math.max(gpuCount, 1),
  };
}
