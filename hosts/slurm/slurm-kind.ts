import { defaultA3rCommand, defineHostKind, expandHome, runningA3rCommand, slotsOf, type OpenLauncherOptions } from "../port/host-kind.ts";
import type { Launcher } from "../port/launcher.ts";
import { resolveSshEntry, sshConnectionFor } from "../ssh/ssh-kind.ts";
import { slurmHostSchema, type SlurmHostConfig, type SlurmHostEntry } from "./slurm-config.ts";

/**
 * `kind: slurm`: sbatch through the cluster's own scheduler. The client commands run on
 * this machine, or on the login node named by `login` (an ssh entry of the same file,
 * which is then no host of its own: clusters forbid computing on login nodes).
 */

async function openSlurmLauncher(host: SlurmHostConfig, options: OpenLauncherOptions): Promise<Launcher> {
  const { SlurmLauncher } = await import("./slurm-launcher.ts");
  const { LocalShell, LoginNodeShell } = await import("./cluster-shell.ts");
  // Through the login node's ssh entry, or the Slurm client commands of this machine.
  const shell = host.login ? new LoginNodeShell(await sshConnectionFor(host.login, options), host.login.name) : new LocalShell();
  return new SlurmLauncher({ host, shell });
}

export const slurmHostKind = defineHostKind<SlurmHostEntry, SlurmHostConfig>({
  kind: "slurm",
  schema: slurmHostSchema,
  hint: (field, path) => {
    if (path.includes("sbatch_options")) return 'write each option as one item, e.g. sbatch_options: ["--constraint=a100", "--exclusive"]';
    if (field === "time_limit" || field === "cancel_grace") return 'write a duration such as "90m" or "4h"';
    return undefined;
  },
  checkReferences: (entry, entries, problem) => {
    if (entry.login === undefined) return;
    const login = entries.find((candidate) => candidate.name === entry.login);
    if (login?.kind !== "ssh")
      problem(
        "login",
        `host "${entry.name}": login "${entry.login}" is ${login ? `a ${login.kind} host, not an ssh one` : "not a host of this file"}`,
        "name an ssh entry of this hosts file (the cluster's login node), or leave login out when sbatch runs on this machine",
      );
  },
  claims: (entry) => (entry.login ? [entry.login] : []),
  resolve: async (entry, context) => {
    const { login, ...rest } = entry;
    const loginEntry = context.entries.find((candidate) => candidate.name === login);
    // On this machine the running a3r is the default, as for a local host; on a login node, `a3r`.
    return {
      ...rest,
      a3r: entry.a3r ?? (loginEntry ? defaultA3rCommand : runningA3rCommand()),
      ...(loginEntry?.kind === "ssh"
        ? { login: await resolveSshEntry(loginEntry as Parameters<typeof resolveSshEntry>[0], context) }
        : { workdir: expandHome(entry.workdir, context.home) }),
    };
  },
  openLauncher: openSlurmLauncher,
  /**
   * What the partition reports (`sinfo`: GPUs through Gres on nodes that are up, CPUs for
   * CPU-only runs), not a fixed count: Slurm enforces the GPUs and queues whatever does
   * not fit, so its slots only keep a stage from flooding the queue.
   */
  capacity: async (host, launcher) => {
    const { SlurmLauncher } = await import("./slurm-launcher.ts");
    if (!(launcher instanceof SlurmLauncher)) throw new Error(`host ${host.name} is a slurm host but its launcher is ${launcher.kind}`);
    const reported = await launcher.capacity();
    return slotsOf(host, reported.gpus, Math.max(reported.gpus, Math.floor(reported.cpus / (host.cpus_per_run ?? 1)), 1));
  },
  check: async (host, row, options) => {
    const { LocalShell, LoginNodeShell } = await import("./cluster-shell.ts");
    const { checkSlurmOver } = await import("./slurm-check.ts");
    const connection = host.login ? await sshConnectionFor(host.login, { reconnectForMs: 0 }) : undefined;
    try {
      if (connection) {
        await connection.connect();
        row.reachable = `yes (login ${host.login!.name})`;
        row.hostKey = `ok ${connection.lastHostKey?.fingerprint ?? ""}`.trim();
      } else row.reachable = "yes (local)";
      const shell = connection ? new LoginNodeShell(connection, host.login!.name) : new LocalShell();
      const check = await checkSlurmOver(shell, host, options);
      Object.assign(row, { ok: check.ok, a3r: check.a3r, gpus: check.gpus, gpuCount: check.gpuCount, freeDisk: check.freeDisk });
      row.problems.push(...check.problems);
    } finally {
      await connection?.close();
    }
  },
});
