import { mkdir, readFile, readdir, stat } from "node:fs/promises";
import { createServer } from "node:net";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { auditBlueprint, blueprintCommandRules, readBlueprintFile, type Blueprint, type CommandRule } from "../blueprints/index.ts";
import { readRunStatus, readMetrics, resultDirPaths, ResultDirWriter, type LedgerSink, type RunState, type RunStatus } from "../campaign/index.ts";
import { A3rError, isA3rError } from "../core/errors.ts";
import { formatDuration } from "../core/duration.ts";
import { redactSecrets, secretValuesFromEnv } from "../core/redact.ts";
import type { ChatModel } from "../llm/index.ts";
import { checkpointDirOf, configCopyPath, envPassthroughOf, planAttempt, processEnv, withheldVariables } from "./launch/attempt-plan.ts";
import { a3rBin, clientRelauncher, latestSwarmCheckpointStep, launchAttempt, readConfigFile, readyUrlOf, swarmHooks } from "./launch/attempt-launch.ts";
import { handleFailure } from "./recover/failure-handling.ts";
import { finalizeRun } from "./finish/finalize-run.ts";
import { isRecordRunning, stopRecord } from "./launch/launched-process.ts";
import { withHeartbeat } from "./supervise/keep-alive.ts";
import { readOomKillCount } from "./supervise/oom-kill-counter.ts";
import { baseValuesOf } from "./recover/overrides.ts";
import { createProgressReporter, type ProgressReporter } from "./supervise/progress-reporter.ts";
import { emptyMemory, memoryFields, memoryFromStatus } from "./run-memory.ts";
import { superviseAttempt, type AttemptEnd, type SwarmHooks } from "./supervise/supervise-attempt.ts";
import { workerSettingsOf, type WorkerSettings } from "./worker-settings.ts";
import type { RunContext } from "./run-context.ts";
import { pathExists } from "../core/path-exists.ts";

/**
 * `a3r worker run`: one blueprint to one complete result directory.
 *
 * 1. read and audit the blueprint; a finished run (finish.flag) is never run again;
 * 2. take the run's lease (waiting out the lease of a worker that died);
 * 3. status.json says where the run is: nothing yet → prepare and launch attempt 1; a live
 *    process group (pid, pgid and start time match) → re-attach and supervise it; a run
 *    whose processes are gone → handle how they ended, as if it had been watched;
 * 4. supervise → classify → recover → relaunch, until success, a give-up or the budget;
 * 5. result.md, curves.svg, finish.flag last; release the lease.
 *
 * Left out: which host runs it (hosts/) and what the result means for the campaign (leader/).
 */
export interface RunWorkerOptions {
  blueprintPath: string;
  resultDir?: string;
  /** The worker's environment: the base of every run's environment. */
  env?: NodeJS.ProcessEnv;
  /** The model for unknown failures; null = none. */
  model?: ChatModel | null;
  gpus?: string;
  /**
   * Aborting it cancels the run: its process groups get TERM then KILL and the run ends
   * `cancelled` with a complete result directory. The CLI aborts on SIGTERM and SIGINT, so
   * a launcher's cancel (TERM to the worker) stops the training too; a SIGKILLed worker
   * leaves the run going, for the next worker to re-attach.
   */
  signal?: AbortSignal;
  /** Books the run's GPU-hours when it ends (blueprints with `gpus` > 0). */
  ledger?: LedgerSink;
  progress?: ProgressReporter;
  commandRules?: readonly CommandRule[];
  /** Who owns the lease; defaults to host:pid. */
  owner?: string;
}

export interface WorkerOutcome {
  state: RunState;
  resultDir: string;
  attempts: number;
  reattached: boolean;
  alreadyFinished: boolean;
  reason: string | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function loadBlueprintForRun(path: string, rules?: readonly CommandRule[]): Promise<Blueprint> {
  const blueprint = await readBlueprintFile(resolve(path));
  const errors = auditBlueprint(blueprint, rules ? { commandRules: rules } : {}).filter((finding) => finding.severity === "error");
  if (errors.length > 0) {
    const first = errors[0]!;
    throw new A3rError("BLUEPRINT_INVALID", `${errors.length} problem(s) in the blueprint, first: ${first.message}`, {
      where: `${first.file}:${first.line}`,
      hint: `${first.hint} (run \`a3r blueprint validate ${path}\` for all of them)`,
    });
  }
  return blueprint;
}

/**
 * The directory lock is held for milliseconds; a lock older than this was left by a worker
 * that died inside it (SIGKILL), and is broken. The campaign default (30 s) would stall a
 * restarted worker for that long.
 */
const lockStaleMs = 5_000;

/** Takes the lease, waiting out one that a dead worker left (at most about two TTLs). */
async function acquireWriter(dir: string, owner: string, settings: WorkerSettings, progress: ProgressReporter): Promise<ResultDirWriter> {
  const deadline = Date.now() + settings.leaseTtlMs * 2 + lockStaleMs + 5_000;
  let told = false;
  for (;;) {
    try {
      return await ResultDirWriter.open(dir, owner, { ttlMs: settings.leaseTtlMs, staleMs: lockStaleMs, timeoutMs: 15_000 });
    } catch (error) {
      const waitable = isA3rError(error, "LEASE_HELD") || isA3rError(error, "LOCK_TIMEOUT");
      if (!waitable || Date.now() > deadline) throw error;
      if (!told) progress.event(`the run's lease is held (${(error as Error).message}); waiting for it to expire`);
      told = true;
      await sleep(Math.min(500, Math.max(50, settings.leaseTtlMs / 4)));
    }
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export async function hasCheckpoint(resultDir: string, mode: Blueprint["mode"]): Promise<boolean> {
  const entries = await readdir(checkpointDirOf(resultDir, mode)).catch(() => [] as string[]);
  return entries.length > 0;
}

export async function runWorker(options: RunWorkerOptions): Promise<WorkerOutcome> {
  const env = options.env ?? process.env;
  const progress = options.progress ?? createProgressReporter(process.stderr);
  const blueprint = await loadBlueprintForRun(options.blueprintPath, options.commandRules);
  const resultDir = resolve(options.resultDir ?? blueprint.resultDir);
  const settings = workerSettingsOf(blueprint, resultDir);
  const paths = resultDirPaths(resultDir);
  const outcome = (state: RunState, extra: Partial<WorkerOutcome> = {}): WorkerOutcome => ({
    state,
    resultDir,
    attempts: 0,
    reattached: false,
    alreadyFinished: false,
    reason: null,
    ...extra,
  });

  if (await pathExists(paths.finishFlag)) {
    const state = (await readFile(paths.finishFlag, "utf8")).trim() as RunState;
    progress.event(`${blueprint.id}: already finished (${state}); a finished run is never run again (use a new result directory)`);
    return outcome(state, { alreadyFinished: true });
  }
  await mkdir(resultDir, { recursive: true });
  const writer = await acquireWriter(resultDir, options.owner ?? `${hostname()}:${process.pid}`, settings, progress);
  try {
    // The worker whose lease we waited out may have finished the run meanwhile.
    if (await pathExists(paths.finishFlag)) {
      const state = (await readFile(paths.finishFlag, "utf8")).trim() as RunState;
      progress.event(`${blueprint.id}: finished (${state}) by the worker that held it; nothing to do`);
      return outcome(state, { alreadyFinished: true });
    }
    const read = await readRunStatus(paths.status);
    const status: RunStatus | undefined = read.status;
    const context: RunContext = {
      blueprint,
      resultDir,
      settings,
      writer,
      memory: status ? memoryFromStatus(status, settings.overrides) : emptyMemory(settings.overrides),
      env,
      model: options.model ?? null,
      progress,
      ...(options.gpus === undefined ? {} : { gpus: options.gpus }),
      ...(options.ledger === undefined ? {} : { ledger: options.ledger }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      // The campaign's own rules ride in the blueprint: the diagnosis is held to them too.
      commandRules: blueprintCommandRules(blueprint.frontMatter, options.commandRules),
      runStartedAtMs: status?.startedAt ? Date.parse(status.startedAt) : Date.now(),
      attempt: status?.attempt ?? 0,
    };
    const state = status?.state;
    if (state === "succeeded" || state === "failed" || state === "timed_out" || state === "cancelled") {
      // The previous worker died between the last status and finish.flag: finish its work.
      await finalizeRun(context, state, status?.reason ?? null, { alreadyTerminal: true });
      return outcome(state, { attempts: context.attempt, reason: status?.reason ?? null });
    }
    if (state === "running" || state === "recovering") {
      const live = [];
      for (const record of context.memory.processes) if (await isRecordRunning(record)) live.push(record);
      const mainRecord = context.memory.processes[0];
      if (state === "running" && mainRecord && live.includes(mainRecord)) {
        await writer.appendEvent("worker.reattached", { attempt: context.attempt, pid: mainRecord.pid, pgid: mainRecord.pgid });
        progress.event(`${blueprint.id}: re-attached to attempt ${context.attempt} (pid ${mainRecord.pid}), not launching again`);
        const end = await supervise(context, await reattachSwarm(context));
        const final = await loop(context, end);
        return outcome(final.state, { attempts: context.attempt, reattached: true, reason: final.reason });
      }
      if (state === "running") {
        // The run ended while nobody watched: judge it from its exit file and log.
        await writer.appendEvent("worker.found-ended", { attempt: context.attempt });
        const end = await supervise(context, await reattachSwarm(context));
        const final = await loop(context, end);
        return outcome(final.state, { attempts: context.attempt, reason: final.reason });
      }
      // Recovering: whatever the last attempt left alive must not run beside the next one.
      for (const record of live) await stopRecord(record, settings.gracePeriodMs);
      const final = await loop(context, undefined);
      return outcome(final.state, { attempts: context.attempt, reason: final.reason });
    }
    const prepared = await prepare(context, status === undefined);
    if (!prepared) return outcome("failed", { attempts: 0, reason: (await readRunStatus(paths.status)).status?.reason ?? null });
    const final = await loop(context, undefined);
    return outcome(final.state, { attempts: context.attempt, reason: final.reason });
  } finally {
    progress.done();
    await writer.release().catch(() => false);
  }
}

/** Checks paths, interpreter and config, copies the blueprint; false when the run failed here. */
async function prepare(context: RunContext, fresh: boolean): Promise<boolean> {
  const { blueprint, writer } = context;
  if (fresh) await writer.writeStatus({ state: "queued", host: hostname(), ...memoryFields(context.memory) });
  await writer.writeStatus({ state: "preparing", host: hostname() });
  await writer.appendEvent("run.preparing", { blueprint: blueprint.id, mode: blueprint.mode });
  await writer.writeBlueprint(await readFile(blueprint.file!, "utf8"));
  const problems: string[] = [];
  const isDirectory = await stat(blueprint.codebase).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (!isDirectory) problems.push(`the codebase ${blueprint.codebase} is not a folder`);
  if (!(await pathExists(blueprint.venv))) problems.push(`the interpreter or environment ${blueprint.venv} does not exist`);
  if (blueprint.config !== null) {
    try {
      await readConfigFile(blueprint.config);
    } catch (error) {
      problems.push((error as Error).message);
    }
  } else if (blueprint.mode === "swarm") {
    problems.push("a swarm blueprint needs a Configuration (the swarm.yaml of the server)");
  }
  if (problems.length === 0) return true;
  const reason = `preparation failed: ${problems.join("; ")}`;
  await writer.appendAttempt({
    attempt: 0,
    title: "preparation failed, nothing launched",
    body: problems.map((problem) => `- ${problem}`).join("\n") + "\n\nFix the blueprint's paths and run it again in a new result directory.",
  });
  await writer.appendEvent("run.prepare-failed", { problems });
  await finalizeRun(context, "failed", reason);
  return false;
}

/** The hooks for a live swarm attempt found in status.json. */
async function reattachSwarm(context: RunContext): Promise<SwarmHooks | undefined> {
  if (context.blueprint.mode !== "swarm") return undefined;
  const server = context.memory.processes[0];
  const url = context.memory.swarmUrl ?? (server ? await readyUrlOf(server) : undefined);
  if (!url) return undefined;
  const plan = planAttempt({
    blueprint: context.blueprint,
    resultDir: context.resultDir,
    settings: context.settings,
    attempt: context.attempt,
    overrides: context.memory.overrides,
    command: context.memory.command ?? context.blueprint.command,
    resume: false,
    configCopy: configCopyPath(context.resultDir, context.attempt, context.blueprint.config),
    ...(context.gpus === undefined ? {} : { gpus: context.gpus }),
    swarmUrl: url,
    a3rBin,
    nodeExecutable: process.execPath,
  });
  return swarmHooks(
    url,
    clientRelauncher(
      context.attempt,
      resultDirPaths(context.resultDir).logs,
      plan.cwd,
      processEnv(context.env, plan, context.blueprint.venv, envPassthroughOf(context.blueprint)),
    ),
  );
}

async function supervise(context: RunContext, swarm: SwarmHooks | undefined, oomKillsAtStart: number | null = null): Promise<AttemptEnd> {
  const metrics = await readMetrics(resultDirPaths(context.resultDir).metrics);
  const ofAttempt = metrics.records.filter((record) => record.attempt === context.attempt);
  let lastStep = ofAttempt.length > 0 ? Math.max(...ofAttempt.map((record) => record.step)) : null;
  // A resumed swarm server reports the steps of its checkpoint again: they are not new.
  if (lastStep === null && context.blueprint.mode === "swarm" && context.attempt > 1) lastStep = await latestSwarmCheckpointStep(context.resultDir);
  const metricName = (context.blueprint.frontMatter.metric as { name?: string } | undefined)?.name;
  return superviseAttempt({
    writer: context.writer,
    attempt: context.attempt,
    mode: context.blueprint.mode,
    processes: context.memory.processes,
    ...(swarm ? { swarm } : {}),
    settings: context.settings,
    runStartedAtMs: context.runStartedAtMs,
    attemptStartedAtMs: context.memory.attemptStartedAt ? Date.parse(context.memory.attemptStartedAt) : Date.now(),
    budgetMs: context.blueprint.timeBudgetMs,
    lastStep,
    oomKillsAtStart,
    ...(context.signal ? { signal: context.signal } : {}),
    ...(metricName ? { metricName } : {}),
    progress: context.progress,
    saveProcesses: async (records) => {
      context.memory.processes = records;
      await context.writer.writeStatus(memoryFields(context.memory));
    },
  });
}

/** Launches the next attempt; returns how it ended (a swarm server that never got ready is a failed attempt). */
async function launchNext(context: RunContext, resume: boolean): Promise<AttemptEnd> {
  const { blueprint, writer, memory } = context;
  context.attempt += 1;
  const attempt = context.attempt;
  const command = memory.command ?? blueprint.command;
  const configCopy = configCopyPath(context.resultDir, attempt, blueprint.config);
  const first = attempt === 1;
  if (first) context.runStartedAtMs = Date.now();
  memory.attemptStartedAt = new Date().toISOString();
  memory.processes = [];
  memory.swarmUrl = null;
  const oomKillsAtStart = readOomKillCount();
  const launched = await withHeartbeat(writer, context.settings.heartbeatIntervalMs, () =>
    launchAttempt(
      {
        blueprint,
        resultDir: context.resultDir,
        settings: context.settings,
        attempt,
        overrides: memory.overrides,
        command,
        resume,
        configCopy,
        ...(context.gpus === undefined ? {} : { gpus: context.gpus }),
      },
      {
        baseEnv: context.env,
        readyTimeoutMs: context.settings.swarmReadyTimeoutMs,
        graceMs: context.settings.gracePeriodMs,
        onProcesses: async (records) => {
          memory.processes = records;
          const main = records[0]!;
          await writer.writeStatus({
            state: "running",
            attempt,
            pid: main.pid,
            pgid: main.pgid,
            ...(first ? { startedAt: new Date(context.runStartedAtMs).toISOString() } : {}),
            reason: null,
            ...memoryFields(memory),
          });
        },
      },
    ),
  );
  const withheld = withheldVariables(context.env, envPassthroughOf(blueprint));
  if (first && withheld.length > 0) await writer.appendEvent("run.env-withheld", { variables: withheld });
  const commands = "failed" in launched ? [] : [...(launched.plan.serverCommand ? [`server: ${launched.plan.serverCommand}`] : []), ...launched.plan.commands];
  const overrides =
    Object.entries(memory.overrides)
      .map(([key, value]) => `${key}=${String(value)}`)
      .join(", ") || "none";
  await writer.appendAttempt({
    attempt,
    title: first ? "launched" : resume ? "relaunched, resuming from the last checkpoint" : "relaunched",
    body: redactSecrets(
      [
        `- Overrides: ${overrides}`,
        `- Config copy: ${configCopy ?? "none (the blueprint has no configuration)"}`,
        `- Resume from checkpoint: ${resume ? "yes (A3R_RESUME=1)" : "no"}`,
        ...(withheld.length > 0 ? [`- Withheld from the run's environment: ${withheld.join(", ")} (list them in env_passthrough to pass them)`] : []),
        blueprint.mode === "swarm"
          ? `- Logs: logs/attempt-${attempt}.log (server), logs/attempt-${attempt}-client-K.log (clients)`
          : `- Log: logs/attempt-${attempt}.log`,
        "",
        "```sh",
        ...(commands.length > 0 ? commands : [command]),
        "```",
      ].join("\n"),
      secretValuesFromEnv(context.env),
    ),
  });
  if ("failed" in launched) {
    await writer.appendEvent("run.launch-failed", { attempt, reason: launched.reason });
    const tail = (await readFile(launched.logFile, "utf8").catch(() => "")).split("\n").slice(-200).join("\n");
    return { kind: "failed", detail: launched.reason, facts: { logTail: tail, exitCode: null, signal: null }, lastStep: null };
  }
  memory.swarmUrl = launched.swarm?.url ?? null;
  if (memory.swarmUrl) await writer.writeStatus(memoryFields(memory));
  await writer.appendEvent("run.launched", {
    attempt,
    pid: launched.processes[0]!.pid,
    pgid: launched.processes[0]!.pgid,
    resume,
    processes: launched.processes.map((record) => ({ role: record.role, pid: record.pid, log: record.logFile })),
  });
  context.progress.event(
    `${blueprint.id}: attempt ${attempt} launched (pid ${launched.processes[0]!.pid}${launched.swarm ? `, swarm ${launched.swarm.url}` : ""})`,
  );
  return supervise(context, launched.swarm, oomKillsAtStart);
}

/** Drives attempts until the run is over: `end` is how the current attempt ended, if one ran. */
async function loop(context: RunContext, end: AttemptEnd | undefined): Promise<{ state: RunState; reason: string | null }> {
  let current = end;
  let resume = context.attempt > 0;
  for (;;) {
    if (current === undefined && context.signal?.aborted) {
      const reason = `cancelled before attempt ${context.attempt + 1} (${String(context.signal.reason ?? "aborted")})`;
      await finalizeRun(context, "cancelled", reason);
      return { state: "cancelled", reason };
    }
    if (current === undefined) {
      if (context.attempt > 0 && Date.now() - context.runStartedAtMs >= context.blueprint.timeBudgetMs) {
        const reason = `time budget ${formatDuration(context.blueprint.timeBudgetMs)} used up before attempt ${context.attempt + 1}`;
        await finalizeRun(context, "timed_out", reason);
        return { state: "timed_out", reason };
      }
      current = await launchNext(context, resume);
    }
    const ended: AttemptEnd = current;
    if (ended.kind === "succeeded") {
      context.memory.history.push({ attempt: context.attempt, ending: `succeeded (${ended.detail})` });
      await context.writer.appendAttempt({ attempt: context.attempt, title: "succeeded", body: `${ended.detail}; last step ${ended.lastStep ?? "none"}.` });
      await finalizeRun(context, "succeeded", null);
      return { state: "succeeded", reason: null };
    }
    if (ended.kind === "cancelled") {
      const reason = `${ended.detail} at step ${ended.lastStep ?? "none"} (attempt ${context.attempt}); partial results kept`;
      context.memory.history.push({ attempt: context.attempt, ending: ended.detail });
      await context.writer.appendAttempt({
        attempt: context.attempt,
        title: "cancelled",
        body: `${reason}. The process group got TERM, then KILL after ${formatDuration(context.settings.gracePeriodMs)} if anything was left.`,
      });
      await context.writer.appendEvent("run.cancelled", { attempt: context.attempt, step: ended.lastStep });
      await finalizeRun(context, "cancelled", reason);
      return { state: "cancelled", reason };
    }
    if (ended.kind === "timed_out") {
      const reason = `${ended.detail} at step ${ended.lastStep ?? "none"} (attempt ${context.attempt}); partial results kept`;
      context.memory.history.push({ attempt: context.attempt, ending: `timed out (${ended.detail})` });
      await context.writer.appendAttempt({
        attempt: context.attempt,
        title: "stopped by the time budget",
        body: `${reason}. The process group got TERM, then KILL after ${formatDuration(context.settings.gracePeriodMs)} if anything was left.`,
      });
      await context.writer.appendEvent("budget.hit", { attempt: context.attempt, budgetMs: context.blueprint.timeBudgetMs, step: ended.lastStep });
      await finalizeRun(context, "timed_out", reason);
      return { state: "timed_out", reason };
    }
    const next = await handleFailure(context, ended, {
      baseValues: context.blueprint.config ? baseValuesOf(await readConfigFile(context.blueprint.config).catch(() => ({}))) : {},
      hasCheckpoint: await hasCheckpoint(context.resultDir, context.blueprint.mode),
      freePort: await freePort(),
    });
    if (next.kind === "finished") return { state: next.state, reason: next.reason };
    resume = next.resume;
    current = undefined;
  }
}
