import { A3rError } from "../../core/errors.ts";
import type { DispatchHost } from "./dispatcher.ts";
import type { HostsFile } from "../kinds/hosts-config.ts";
import type { Launcher } from "../port/launcher.ts";

/**
 * Opens a launcher for every host of a hosts file and learns its capacity. A host that
 * cannot be reached is left out with its reason instead of failing the whole dispatch.
 * Launchers (ssh2, BullMQ) are loaded here, on first use, so commands that never dispatch
 * start fast.
 */
export async function openDispatchHosts(file: HostsFile): Promise<{ hosts: DispatchHost[]; problems: string[] }> {
  const { openLauncher } = await import("../kinds/open-launcher.ts");
  const { resolveCapacity } = await import("./host-capacity.ts");
  const hosts: DispatchHost[] = [];
  const problems: string[] = [];
  for (const config of file.hosts) {
    let launcher: Launcher | undefined;
    try {
      // Connected now, so an unreachable host is left out with its reason instead of failing later.
      launcher = await openLauncher(config, { reconnectForMs: 5000, connect: true });
      hosts.push({ config, launcher, capacity: await resolveCapacity(config, launcher) });
    } catch (error) {
      await launcher?.close().catch(() => undefined);
      problems.push(`${config.name}: ${error instanceof A3rError ? `[${error.code}] ${error.message}` : String(error)}`);
    }
  }
  return { hosts, problems };
}

export async function closeDispatchHosts(hosts: DispatchHost[]): Promise<void> {
  await Promise.all(hosts.map((host) => host.launcher.close().catch(() => undefined)));
}
