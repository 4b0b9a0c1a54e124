import { access, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { z } from "zod";
import type { Blueprint } from "../blueprints/index.ts";
import { readRunStatus, resultDirPaths } from "../campaign/index.ts";
import { formatDuration } from "../core/duration.ts";
import { a3rBin } from "./launch/attempt-launch.ts";
import { configCopyPath, planAttempt } from "./launch/attempt-plan.ts";
import { interpreterFound } from "./launch/interpreter.ts";
import { isRecordRunning } from "./launch/launched-process.ts";
import { swarmConfigRefusal } from "./launch/swarm-preflight.ts";
import { memoryFromStatus } from "./run/run-memory.ts";
import { decideSandbox } from "./launch/sandbox-plan.ts";
import type { WorkerSettings } from "./rules/worker-settings.ts";

/** The sandbox the run would get (it probes bubblewrap once; starts nothing of the run). */
function sandboxLine(blueprint: Blueprint, hostSetting: string | undefined): string {
  try {
    const decision = decideSandbox(blueprint, hostSetting, process.env);
    return `${decision.mode} (${decision.why})`;
  } catch (error) {
    return `REFUSED ${(error as Error).message}`;
  }
}

/**
 * `a3r worker run --dry-run`: what the worker would do, from the same plan a real run
 * uses, without writing anything or starting a process.
 */
export async function describeRun(
  blueprint: Blueprint,
  settings: WorkerSettings,
  resultDir: string,
  options: { gpus?: string; model?: string; configSchema?: z.ZodType; sandbox?: string } = {},
): Promise<string> {
  const paths = resultDirPaths(resultDir);
  const lines = [`Blueprint ${blueprint.id} (${blueprint.mode} mode) from ${blueprint.file ?? "<text>"}`, `Result directory: ${resultDir}`];
  const finished = await readFile(paths.finishFlag, "utf8").then(
    (text) => text.trim(),
    () => undefined,
  );
  const status = (await readRunStatus(paths.status).catch(() => ({ status: undefined }))).status;
  if (finished) {
    lines.push(`State: finished (${finished}); the worker would do nothing (a finished run is never run again).`);
    return `${lines.join("\n")}\n`;
  }
  if (status && (status.state === "running" || status.state === "recovering")) {
    const memory = memoryFromStatus(status, settings.overrides);
    const live = memory.processes[0] ? await isRecordRunning(memory.processes[0]) : false;
    lines.push(
      live
        ? `State: ${status.state}, attempt ${status.attempt}, pid ${status.pid} alive: the worker would re-attach and supervise it (no new launch).`
        : `State: ${status.state}, attempt ${status.attempt}, no live process: the worker would judge how it ended and recover.`,
    );
  } else {
    lines.push(`State: ${status?.state ?? "new"}: the worker would prepare and launch attempt 1.`);
  }
  const exists = (path: string) =>
    access(path).then(
      () => true,
      () => false,
    );
  // The same checks as the worker's preparation: an interpreter may be a program name on PATH (`node`).
  const checks: Array<[string, Promise<boolean>]> = [
    [`codebase ${blueprint.codebase}`, exists(blueprint.codebase)],
    [`interpreter ${blueprint.venv}`, interpreterFound(blueprint.venv, process.env.PATH)],
    ...(blueprint.config ? [[`config ${blueprint.config}`, exists(blueprint.config)] as [string, Promise<boolean>]] : []),
  ];
  lines.push("", "Prepare:");
  for (const [label, found] of checks) lines.push(`  ${(await found) ? "ok     " : "MISSING"} ${label}`);
  if (blueprint.mode === "swarm" && blueprint.config) {
    const scratch = await mkdtemp(join(tmpdir(), "a3r-dry-run-"));
    try {
      const refusal = await swarmConfigRefusal(blueprint, resultDir, settings.overrides, {
        scratch,
        ...(options.configSchema ? { configSchema: options.configSchema } : {}),
      });
      lines.push(refusal === null ? "  ok      swarm config with the overrides (loads as a3r swarm serve would)" : `  REFUSED ${refusal}`);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
  const configCopy = configCopyPath(resultDir, 1, blueprint.config);
  const plan = planAttempt({
    blueprint,
    resultDir,
    settings,
    attempt: 1,
    overrides: settings.overrides,
    command: blueprint.command,
    resume: false,
    configCopy,
    ...(options.gpus === undefined ? {} : { gpus: options.gpus }),
    a3rBin,
    nodeExecutable: process.execPath,
  });
  lines.push("", `Launch attempt 1 in ${plan.cwd} (own process group, log ${resolve(paths.logs, "attempt-1.log")}):`);
  lines.push(`  sandbox: ${sandboxLine(blueprint, options.sandbox ?? process.env.A3R_SANDBOX)}`);
  if (plan.serverCommand) lines.push(`  server: ${plan.serverCommand}`, "  then, once it prints its URL, one client per line:");
  for (const command of plan.commands) lines.push(...command.split("\n").map((line) => `  ${line}`));
  lines.push("", "Environment added:", ...Object.entries(plan.env).map(([key, value]) => `  ${key}=${value}`));
  if (blueprint.mode === "swarm")
    lines.push("  A3R_SWARM_ADMIN_TOKEN=(a new random token per run, to the server and its clients only; never shown or written)");
  lines.push(
    "",
    "Supervise:",
    `  poll every ${formatDuration(settings.pollIntervalMs)}, heartbeat every ${formatDuration(settings.heartbeatIntervalMs)}`,
    `  first-signal timeout ${formatDuration(settings.firstSignalTimeoutMs)}, stall after ${formatDuration(settings.stallTimeoutMs)} without a new step`,
    `  success: ${settings.requireTrainingSignal ? "exit 0 (or the swarm finishing) with at least one step or metric recorded" : "exit 0 (or the swarm finishing), even with no step or metric (require_training_signal: false)"}`,
    `  time budget ${formatDuration(blueprint.timeBudgetMs)} (TERM, then KILL after ${formatDuration(settings.gracePeriodMs)})`,
    `  metrics: ${blueprint.mode === "swarm" ? "swarm /metrics, " : "log lines, "}${settings.metricsFile}`,
    `  unknown failures: ${options.model ?? "no language model configured (they fail the run)"}`,
  );
  return `${lines.join("\n")}\n`;
}
