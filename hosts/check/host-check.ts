import { isA3rError } from "../../core/errors.ts";
import type { HostConfig } from "../hosts-config.ts";
import { formatBytes, parseProbe, probeLocally, probeScript, type ProbeResult } from "./host-probe.ts";
import { openLauncher, sshConnectionFor } from "../open-launcher.ts";

/**
 * One row of `a3r hosts check`: can a3r use this host right now? Every probe has a
 * timeout, so an unreachable host is a row with the reason, never a hang.
 *
 * Left out: whether the blueprints' codebases and environments exist there (the worker's
 * prepare step checks them per run).
 */
export interface HostCheck {
  name: string;
  kind: HostConfig["kind"];
  ok: boolean;
  reachable: string;
  hostKey: string;
  a3r: string;
  gpus: string;
  gpuCount: number | null;
  freeDisk: string;
  problems: string[];
}

export interface CheckHostOptions {
  /** Slurm hosts: also submit a trivial job and wait for it to end (`sbatch --wait`). */
  submitJob?: boolean;
}

export async function checkHost(host: HostConfig, options: CheckHostOptions = {}): Promise<HostCheck> {
  const row: HostCheck = {
    name: host.name,
    kind: host.kind,
    ok: false,
    reachable: "no",
    hostKey: "-",
    a3r: "-",
    gpus: "-",
    gpuCount: null,
    freeDisk: "-",
    problems: [],
  };
  try {
    if (host.kind === "queue") {
      const launcher = await openLauncher(host);
      await launcher.close();
      row.reachable = "yes";
      row.a3r = "(daemons)";
      row.gpus = String(host.gpus);
      row.gpuCount = host.gpus;
      row.ok = true;
      return row;
    }
    if (host.kind === "slurm") {
      const { LocalShell, LoginNodeShell } = await import("../slurm/cluster-shell.ts");
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
      return row;
    }
    let probe: ProbeResult;
    if (host.kind === "local") {
      probe = await probeLocally(host.a3r, host.workdir);
      row.reachable = "yes (local)";
    } else {
      const connection = await sshConnectionFor(host, { reconnectForMs: 0 });
      try {
        await connection.connect();
        row.reachable = "yes";
        row.hostKey = `ok ${connection.lastHostKey?.fingerprint ?? ""}`.trim();
        probe = parseProbe((await connection.exec(probeScript(host.a3r, host.workdir), { timeoutMs: 120_000 })).stdout);
      } finally {
        await connection.close();
      }
    }
    row.a3r = probe.a3r.ok ? `yes (${probe.a3r.detail.slice(0, 30)})` : "no";
    if (!probe.a3r.ok) row.problems.push(`"${host.a3r} --version" failed: ${probe.a3r.detail || "no output"}`);
    row.gpuCount = host.gpus === "detect" ? probe.gpus.length : host.gpus;
    row.gpus = host.gpus === "detect" ? probe.gpuDetail : `${host.gpus} (configured; found ${probe.gpuDetail})`;
    row.freeDisk = formatBytes(probe.freeDiskBytes);
    row.ok = probe.a3r.ok;
  } catch (error) {
    if (isA3rError(error)) {
      if (error.code === "HOST_KEY_MISMATCH" || error.code === "HOST_KEY_UNKNOWN") {
        row.reachable = "yes";
        row.hostKey = `REFUSED ${String(error.details?.fingerprint ?? "")}`;
      }
      row.problems.push(`${error.code}: ${error.message}${error.hint ? ` (${error.hint})` : ""}`);
    } else {
      row.problems.push(error instanceof Error ? error.message : String(error));
    }
  }
  return row;
}
