import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { A3rError } from "../core/errors.ts";
import { loadHostsFile } from "../hosts/hosts-config.ts";
import type { DispatchHost, Launcher } from "../hosts/index.ts";
import { LocalLauncher } from "../hosts/local-launcher.ts";

/**
 * The hosts a leader started from the command line dispatches to: those of a hosts file,
 * or this machine alone (CPU-only, two runs at a time, the work folder under the runs
 * directory so a resumed leader finds its runs again).
 *
 * Left out: GPU detection for the local default (a topic that needs GPUs names a hosts
 * file with `gpus: detect`).
 */
const checkoutEntry = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));

/** How this machine calls this checkout's a3r (the local host's `a3r`). */
export function localA3rCommand(): string {
  return `${process.execPath} ${checkoutEntry}`;
}

export function localHostWorkdir(runsDir: string): string {
  return join(runsDir, ".hosts", "here");
}

export function localDispatchHost(runsDir: string, maxRuns = 2): DispatchHost {
  const workdir = localHostWorkdir(runsDir);
  const a3r = localA3rCommand();
  return {
    config: { name: "here", kind: "local", gpus: 0, max_runs: maxRuns, workdir, a3r },
    launcher: new LocalLauncher({ host: "here", workdir, a3r }),
    capacity: { name: "here", gpuIndices: [], maxRuns },
  };
}

/** Opens every host of a hosts file; one that cannot be reached is left out with its reason. */
export async function openDispatchHosts(file: string): Promise<{ hosts: DispatchHost[]; problems: string[] }> {
  const hostsFile = await loadHostsFile(file);
  const { openLauncher } = await import("../hosts/open-launcher.ts");
  const { resolveCapacity } = await import("../hosts/host-capacity.ts");
  const { SshLauncher } = await import("../hosts/ssh-launcher.ts");
  const hosts: DispatchHost[] = [];
  const problems: string[] = [];
  for (const config of hostsFile.hosts) {
    let launcher: Launcher | undefined;
    try {
      launcher = await openLauncher(config, { reconnectForMs: 5000 });
      if (launcher instanceof SshLauncher) await launcher.connection.connect();
      hosts.push({ config, launcher, capacity: await resolveCapacity(config, launcher) });
    } catch (error) {
      await launcher?.close().catch(() => undefined);
      problems.push(`${config.name}: ${error instanceof A3rError ? `[${error.code}] ${error.message}` : String(error)}`);
    }
  }
  if (hosts.length === 0) {
    throw new A3rError("HOST_UNREACHABLE", `no host of ${file} can take runs (${problems.join("; ")})`, { where: file, hint: `run a3r hosts check --hosts ${file} to see why` });
  }
  return { hosts, problems };
}

export async function closeDispatchHosts(hosts: DispatchHost[]): Promise<void> {
  await Promise.all(hosts.map((host) => host.launcher.close().catch(() => undefined)));
}
