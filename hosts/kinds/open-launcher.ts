import type { OpenLauncherOptions } from "../port/host-kind.ts";
import type { HostConfig } from "./hosts-config.ts";
import type { Launcher } from "../port/launcher.ts";
import { hostKindOf } from "./registry.ts";

export type { OpenLauncherOptions } from "../port/host-kind.ts";
export { sshConnectionFor } from "../ssh/ssh-kind.ts";

/**
 * The one place that turns a loaded hosts.yaml entry into a launcher: its kind's factory
 * (`openLauncher` of its `HostKind`, kinds/registry.ts). Opening an ssh launcher does not
 * connect yet (the first command does, with the reconnect policy) unless `connect` says
 * so; a queue launcher connects to Redis and checks its eviction policy at once; a slurm
 * launcher runs its client commands here or on its login node (ssh, connected on first
 * use). ssh2 and BullMQ load only when a host of their kind is opened: `a3r status` and
 * local campaigns never pay for them.
 */
export async function openLauncher(host: HostConfig, options: OpenLauncherOptions = {}): Promise<Launcher> {
  return hostKindOf(host).openLauncher(host, options);
}
