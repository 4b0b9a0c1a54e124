import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { A3rError } from "../../core/errors.ts";
import { loadHostsFile } from "../../hosts/index.ts";
import type { DispatchHost } from "../../hosts/index.ts";
import { openDispatchHosts } from "../../hosts/index.ts";
import { LocalLauncher } from "../../hosts/index.ts";

/**
 * The hosts a leader started from the command line dispatches to: those of a hosts file,
 * or this machine alone (CPU-only, two runs at a time, the work folder under the runs
 * directory so a resumed leader finds its runs again).
 *
 * Left out: GPU detection for the local default (a topic that needs GPUs names a hosts
 * file with `gpus: detect`).
 */
const checkoutEntry = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));

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

/** Opens every host of a hosts file; refuses when none of them can take runs. */
export async function openDispatchHostsFile(file: string): Promise<{ hosts: DispatchHost[]; problems: string[] }> {
  const { hosts, problems } = await openDispatchHosts(await loadHostsFile(file));
  if (hosts.length === 0) {
    throw new A3rError("HOST_UNREACHABLE", `no host of ${file} can take runs (${problems.join("; ")})`, {
      where: file,
      hint: `run a3r hosts check --hosts ${file} to see why`,
    });
  }
  return { hosts, problems };
}
