import { shellQuote } from "../../core/shell-quote.ts";
import { formatBytes, parseProbe, probeScript } from "../port/host-probe.ts";
import type { ClusterShell } from "./cluster-shell.ts";
import { parseSinfo } from "./sinfo.ts";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { resourceArguments, timeLimitMinutes } from "./slurm-job.ts";

/**
 * `a3r hosts check` for a slurm host, in one script where its client commands run: the
 * commands are there, the partition exists, `sbatch --test-only` accepts what a run asks
 * (partition, account, QOS, Gres, time, extra options), a3r answers, and (asked for) a
 * trivial job is submitted and runs to its end.
 */
export interface SlurmCheck {
  ok: boolean;
  a3r: string;
  gpus: string;
  gpuCount: number | null;
  freeDisk: string;
  problems: string[];
}

const commands = ["sbatch", "squeue", "scancel", "sinfo"];

export function slurmCheckScript(host: SlurmHostConfig, options: { submitJob?: boolean } = {}): string {
  const conf = host.slurm_conf ? `SLURM_CONF=${shellQuote(host.slurm_conf)}; export SLURM_CONF` : ":";
  const asked = resourceArguments(host, host.gpus_per_run ?? 0, timeLimitMinutes(host, undefined) ?? 1)
    .map(shellQuote)
    .join(" ");
  return [
    conf,
    `echo @@commands; for c in ${commands.join(" ")}; do command -v "$c" >/dev/null 2>&1 || echo "$c"; done`,
    `echo @@sinfo; sinfo -h -N -o '%N|%P|%c|%G|%t' 2>&1; echo "@@sinfo-exit $?"`,
    `echo @@testonly; sbatch --test-only ${asked} --job-name=a3r-check --output=/dev/null --wrap=true 2>&1; echo "@@testonly-exit $?"`,
    ...(options.submitJob
      ? [`echo @@job; timeout 300 sbatch --wait ${asked} --job-name=a3r-check --output=/dev/null --wrap=true 2>&1; echo "@@job-exit $?"`]
      : []),
    probeScript(host.a3r, host.workdir),
  ].join("\n");
}

function section(stdout: string, name: string): { text: string; exit: string | undefined } {
  const start = stdout.indexOf(`@@${name}\n`);
  const exit = new RegExp(`^@@${name}-exit (\\d+)$`, "m").exec(stdout);
  if (start < 0) return { text: "", exit: undefined };
  const from = start + name.length + 3;
  const end = stdout.indexOf("\n@@", from - 1);
  return { text: stdout.slice(from, end < 0 ? undefined : end + 1).trim(), exit: exit?.[1] };
}

export function parseSlurmCheck(host: SlurmHostConfig, stdout: string, options: { submitJob?: boolean } = {}): SlurmCheck {
  const problems: string[] = [];
  const missing = section(stdout, "commands").text.split("\n").filter(Boolean);
  if (missing.length > 0)
    problems.push(`Slurm client commands missing: ${missing.join(", ")} (install slurm-client, or set login: to the cluster's login node)`);
  const sinfo = section(stdout, "sinfo");
  let gpus = "-";
  let gpuCount: number | null = null;
  if (sinfo.exit !== "0") problems.push(`sinfo failed: ${sinfo.text.slice(0, 200) || "no answer"} (is slurmctld reachable? slurm_conf?)`);
  else {
    const capacity = parseSinfo(sinfo.text, host.partition, host.gres);
    const known = sinfo.text.split("\n").some((line) => line.split("|")[1]?.replace(/\*$/, "") === capacity.partition);
    if (!known)
      problems.push(
        host.partition
          ? `partition "${host.partition}" does not exist (sinfo lists: ${partitionsOf(sinfo.text)})`
          : "the cluster has no default partition: set partition in hosts.yaml",
      );
    else if (capacity.nodes === 0) problems.push(`partition "${capacity.partition}" has no node up`);
    gpuCount = capacity.gpus;
    gpus = `${capacity.gpus} (${host.gres}) and ${capacity.cpus} CPUs on ${capacity.nodes} node(s) in ${capacity.partition ?? "?"} (sinfo)`;
  }
  const testOnly = section(stdout, "testonly");
  if (testOnly.exit !== "0") problems.push(`sbatch --test-only refused what a run asks: ${testOnly.text.slice(0, 300)}`);
  if (options.submitJob) {
    const job = section(stdout, "job");
    if (job.exit !== "0") problems.push(`a trivial job did not run to its end (sbatch --wait, exit ${job.exit ?? "?"}): ${job.text.slice(0, 200)}`);
  }
  const probe = parseProbe(stdout.slice(stdout.indexOf("@@a3r")));
  if (!probe.a3r.ok) problems.push(`"${host.a3r} --version" failed: ${probe.a3r.detail || "no output"}`);
  return {
    ok: problems.length === 0,
    a3r: probe.a3r.ok ? `yes (${probe.a3r.detail.slice(0, 30)})` : "no",
    gpus,
    gpuCount,
    freeDisk: formatBytes(probe.freeDiskBytes),
    problems,
  };
}

function partitionsOf(sinfo: string): string {
  return (
    [
      ...new Set(
        sinfo
          .split("\n")
          .map((line) => line.split("|")[1]?.replace(/\*$/, ""))
          .filter(Boolean),
      ),
    ].join(", ") || "none"
  );
}

export async function checkSlurmOver(shell: ClusterShell, host: SlurmHostConfig, options: { submitJob?: boolean } = {}): Promise<SlurmCheck> {
  const result = await shell.exec(slurmCheckScript(host, options), { idempotent: true, timeoutMs: options.submitJob ? 420_000 : 120_000 });
  return parseSlurmCheck(host, result.stdout, options);
}
