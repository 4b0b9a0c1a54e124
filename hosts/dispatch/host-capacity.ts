import { hostKindOf } from "../kinds/registry.ts";
import type { HostConfig } from "../kinds/hosts-config.ts";
import type { Launcher } from "../port/launcher.ts";
import type { HostCapacity } from "../port/scheduler.ts";

/**
 * A host's slots for the scheduler, as its kind counts them (`capacity` of its `HostKind`,
 * kinds/registry.ts): local and ssh hosts their GPU indices (nvidia-smi when hosts.yaml
 * says `detect`, none found = a CPU-only host), a queue host what hosts.yaml says, a slurm
 * host what its partition reports; and the most concurrent runs (`max_runs`, default one
 * per GPU, at least one).
 *
 * Left out: GPUs that exist but are busy with work a3r did not start.
 */
export async function resolveCapacity(host: HostConfig, launcher: Launcher): Promise<HostCapacity> {
  return hostKindOf(host).capacity(host, launcher);
}
