import { InvalidArgumentError, type Command } from "commander";
import { resolve } from "node:path";
import { readBlueprintFile } from "../blueprints/index.ts";
import { assertCampaignId, campaignPaths } from "../campaign/index.ts";
import { parseDuration } from "../core/duration.ts";
import { A3rError } from "../core/errors.ts";
import { loadHostsFile } from "../hosts/index.ts";
import type { DispatchItem, DispatchRow } from "../hosts/index.ts";
import { dispatchChanges, formatTable, renderDispatchTable, renderHostChecks } from "./views/run-table.ts";
import { registerWorkerDaemonCommand } from "./worker-daemon-command.ts";
import { closeDispatchHosts, openDispatchHosts } from "../hosts/index.ts";
import type { Launcher, RunProgress } from "../hosts/index.ts";
import { exitCode } from "./exit-codes.ts";
import { createTerminalFrame } from "../core/terminal-frame.ts";

// Launchers pull in ssh2 and BullMQ (half a second to load): loaded only by the commands
// that use them, so every other `a3r` command starts as fast as before.
const launchers = () => import("../hosts/index.ts");

/**
 * `a3r hosts check`, `a3r hosts daemon`, `a3r dispatch` and `a3r runs`: thin wrappers
 * around hosts/ (hosts.yaml, launchers, scheduler, dispatcher).
 */
function intervalOption(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms < 100) throw new InvalidArgumentError("--interval must be a duration such as 2s or 500ms (at least 100ms).");
  return ms;
}

export function registerHostsCommands(program: Command): void {
  const hosts = program.command("hosts").description("the machines blueprints run on (hosts.yaml)");
  hosts
    .command("check")
    .description("per host: reachable, host key, a3r callable, GPUs, free disk")
    .requiredOption("--hosts <file>", "hosts.yaml")
    .option("--json", "print JSON instead of a table")
    .option("--submit-job", "on Slurm hosts, also submit a trivial job and wait for it to run (sbatch --wait)")
    .action(async (flags: { hosts: string; json?: boolean; submitJob?: boolean }) => {
      const file = await loadHostsFile(flags.hosts);
      const { checkHost } = await import("../hosts/index.ts");
      const checks = await Promise.all(file.hosts.map((host) => checkHost(host, flags.submitJob ? { submitJob: true } : {})));
      process.stdout.write(flags.json ? `${JSON.stringify(checks, null, 2)}\n` : `${renderHostChecks(checks)}\n`);
      if (!checks.every((check) => check.ok)) process.exitCode = exitCode.failure;
    });
  registerWorkerDaemonCommand(hosts);

  program
    .command("dispatch")
    .description("put blueprints on the hosts of hosts.yaml (GPU slots respected); with --wait, follow them and fetch their results")
    .argument("<blueprints...>", "blueprint .md files")
    .requiredOption("--hosts <file>", "hosts.yaml")
    .option("--campaign <id>", "campaign id (default: the blueprint's campaign field, else adhoc)")
    .option("--runs-dir <dir>", "data folder; results land in <runs-dir>/<campaign>/results/<id>", "runs")
    .option("--wait", "follow the runs until they finish, fetch and audit their result directories")
    .option("--interval <duration>", "poll interval with --wait", intervalOption, 2000)
    .option("--json", "print the final rows as JSON")
    .action(async (files: string[], flags: { hosts: string; campaign?: string; runsDir: string; wait?: boolean; interval: number; json?: boolean }) => {
      await dispatch(files, flags);
    });

  program
    .command("runs")
    .description("what runs where: every run the hosts of hosts.yaml know")
    .option("--hosts <file>", "hosts.yaml", "hosts.yaml")
    .option("--json", "print JSON instead of a table")
    .action(async (flags: { hosts: string; json?: boolean }) => {
      await listRuns(flags);
    });
}

async function dispatch(
  files: string[],
  flags: { hosts: string; campaign?: string; runsDir: string; wait?: boolean; interval: number; json?: boolean },
): Promise<void> {
  const hostsFile = await loadHostsFile(flags.hosts);
  const { dispatchBlueprints, isDone } = await import("../hosts/index.ts");
  const items: DispatchItem[] = [];
  const seen = new Set<string>();
  for (const file of files) {
    const blueprint = await readBlueprintFile(file);
    if (seen.has(blueprint.id))
      throw new A3rError("USAGE", `blueprint id ${blueprint.id} is given twice`, { where: file, hint: "each blueprint id runs once per campaign" });
    seen.add(blueprint.id);
    const fromFile = typeof blueprint.frontMatter.campaign === "string" ? blueprint.frontMatter.campaign : undefined;
    const campaign = flags.campaign ?? fromFile ?? "adhoc";
    assertCampaignId(campaign);
    const paths = campaignPaths(resolve(flags.runsDir), campaign);
    items.push({ blueprint, file: resolve(file), campaign, resultDir: paths.result(blueprint.id), eventsFile: paths.events });
  }
  const { hosts, problems } = await openDispatchHosts(hostsFile);
  for (const problem of problems) process.stderr.write(`warning: host left out: ${problem}\n`);
  if (hosts.length === 0) {
    throw new A3rError("HOST_UNREACHABLE", `no host of ${hostsFile.file} can take runs`, { hint: "run a3r hosts check --hosts to see why" });
  }
  const live = Boolean(process.stdout.isTTY) && !flags.json && flags.wait === true;
  const frame = live ? createTerminalFrame({ stream: process.stdout }) : null;
  const previous = new Map<string, string>();
  const onUpdate = (rows: DispatchRow[]): void => {
    if (flags.json) return;
    if (frame) frame.draw(renderDispatchTable(rows));
    else for (const line of dispatchChanges(rows, previous)) process.stdout.write(`${line}\n`);
  };
  const abort = new AbortController();
  const onInterrupt = (): void => {
    process.stderr.write("\nstopped waiting; the runs keep going (a3r runs --hosts ... shows them; dispatch again to follow)\n");
    abort.abort();
  };
  process.once("SIGINT", onInterrupt);
  let rows: DispatchRow[];
  try {
    rows = await dispatchBlueprints({ items, hosts, wait: flags.wait === true, intervalMs: flags.interval, onUpdate, signal: abort.signal });
  } finally {
    frame?.close();
    process.removeListener("SIGINT", onInterrupt);
    await closeDispatchHosts(hosts);
  }
  if (flags.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  const failed = flags.wait
    ? rows.filter((row) => !(isDone(row) && row.state === "succeeded" && row.auditErrors === 0))
    : rows.filter((row) => row.state === "waiting" || row.state === "unschedulable" || row.state === "launch_failed");
  if (failed.length > 0) {
    if (!flags.json) {
      const why = flags.wait ? "did not succeed with a clean result" : "were not launched (no free slot now, or none that fits)";
      process.stderr.write(`${failed.length} blueprint(s) ${why}: ${failed.map((row) => `${row.blueprintId} (${row.state})`).join(", ")}\n`);
    }
    process.exitCode = exitCode.failure;
  }
}

async function listRuns(flags: { hosts: string; json?: boolean }): Promise<void> {
  const hostsFile = await loadHostsFile(flags.hosts);
  const { openLauncher } = await launchers();
  const found: Array<RunProgress | { host: string; error: string }> = [];
  for (const config of hostsFile.hosts) {
    let launcher: Launcher | undefined;
    try {
      launcher = await openLauncher(config, { reconnectForMs: 5000 });
      found.push(...(await launcher.pollMany(await launcher.list())));
    } catch (error) {
      found.push({ host: config.name, error: error instanceof A3rError ? `[${error.code}] ${error.message}` : String(error) });
    } finally {
      await launcher?.close().catch(() => undefined);
    }
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(found, null, 2)}\n`);
    return;
  }
  const rows = found.map((entry) =>
    "error" in entry
      ? [entry.host, "-", "-", "unreachable", "-", "-", "-", entry.error.slice(0, 80)]
      : [
          entry.host,
          entry.ref.campaign,
          entry.ref.blueprintId,
          entry.state,
          entry.step === null ? "-" : String(entry.step),
          entry.gpuIndices.join(",") || "-",
          entry.heartbeatAt ?? "-",
          entry.reason ?? "",
        ],
  );
  process.stdout.write(
    `${rows.length === 0 ? "no runs on any host\n" : `${formatTable(["HOST", "CAMPAIGN", "BLUEPRINT", "STATE", "STEP", "GPUS", "HEARTBEAT", "NOTE"], rows)}\n`}`,
  );
  if (found.some((entry) => "error" in entry)) process.exitCode = exitCode.failure;
}
