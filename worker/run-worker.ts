import { mkdir, readdir, stat } from "node:fs/promises";
import { createServer } from "node:net";
import { hostname } from "node:os";
import { dirname, resolve } from "node:path";
import {
  auditBlueprint,
  baseValuesOf,
  readConfigFile,
  blueprintCommandRules,
  blueprintTextForCopy,
  readBlueprintFile,
  type Blueprint,
  type CommandRule,
  type ConfigSchemas,
} from "../blueprints/index.ts";
import {
  findCampaignOf,
  isTerminalRunState,
  readRunStatus,
  readMetrics,
  readStopRequest,
  resultDirPaths,
  ResultDirWriter,
  type LedgerSink,
  type RunState,
  type RunStatus,
} from "../campaign/index.ts";
import { A3rError, isA3rError } from "../core/errors.ts";
import { formatDuration } from "../core/duration.ts";
import { redactSecrets, secretValuesFromEnv } from "../core/redact.ts";
import type { ChatModel } from "../llm/index.ts";
import { checkpointDirOf, configCopyPath, envPassthroughOf, planAttempt, processEnv, withheldVariables } from "./launch/attempt-plan.ts";
import {
  a3rBin,
  attemptPlanRefusal,
  clientRelauncher,
  latestSwarmCheckpointStep,
  launchAttempt,
  readyUrlOf,
  swarmClientConfine,
  swarmHooks,
  type SwarmHooks,
} from "./launch/attempt-launch.ts";
import { handleFailure, resumeAwaitingApproval } from "./failure-handling.ts";
import { finalizeRun, lastStepOf, plannedStepsOfRun } from "./finish/finalize-run.ts";
import { stoppedShortReason } from "./rules/planned-steps.ts";
import { recordRefusal } from "./finish/refusal.ts";
import { isRecordRunning, stopRecord } from "./launch/launched-process.ts";
import { stopEscapedProcesses } from "./launch/run-tag.ts";
import { crashPoint } from "./launch/fault-point.ts";
import { confineResultDir } from "./launch/result-dir-confinement.ts";
import { newSwarmAdminToken, swarmAdminTokenOf, swarmAdminTokenVariable } from "./launch/swarm-admin-token.ts";
import { withHeartbeat } from "./supervise/keep-alive.ts";
import { readLogTail } from "./supervise/log-follower.ts";
import { readOomKillCount } from "./supervise/oom-kill-counter.ts";
import { lossMetricsOf } from "./rules/loss-metrics.ts";
import { createProgressReporter, type ProgressReporter } from "./supervise/progress-reporter.ts";
import { emptyMemory, memoryFields, memoryFromStatus } from "./run/run-memory.ts";
import { superviseAttempt, type AttemptEnd } from "./supervise-attempt.ts";
import { workerSettingsOf, type WorkerSettings } from "./rules/worker-settings.ts";
import type { RunContext } from "./run/run-context.ts";
import { pathExists } from "../core/path-exists.ts";
import {
  findStorageFailureRecord,
  removeStorageFailureRecord,
  saveStorageFailureRecord,
  storageFailureOf,
  storageFailureRecord,
  type StopOutcome as StorageStopOutcome,
  type StorageFailureRecord,
} from "./supervise/storage-failure.ts";
import { interpreterFound } from "./launch/interpreter.ts";
import { swarmConfigRefusal } from "./launch/swarm-preflight.ts";
import { decideSandbox } from "./launch/sandbox-plan.ts";

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
  /**
   * Folders the result directory must really (symlinks resolved) be inside; default: the
   * campaign's `results/` for a run placed there, else anywhere. A result directory that is
   * a symbolic link is always refused (launch/result-dir-confinement.ts).
   */
  allowedRoots?: readonly string[];
  /**
   * The engines' config schemas by blueprint mode (the CLI passes swarm's): where a bare
   * override key lands in the config copy, and the defaults the playbook changes from.
   * Without one, keys land by the config file alone (blueprints/overrides/).
   */
  configSchemas?: ConfigSchemas;
  /**
   * The host's sandbox setting (`--sandbox`, else `A3R_SANDBOX`: hosts.yaml `sandbox:`),
   * beside the blueprint's own (launch/sandbox-plan.ts, core/sandbox/sandbox-choice.ts).
   */
  sandbox?: string;
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

/**
 * Reads and audits a blueprint; BLUEPRINT_INVALID for any error. With `recordRefusal`, a
 * blueprint whose only errors are the command policy's gets a `refused` result directory
 * first (in `recordRefusal.resultDir`, else its own Result Directory; see finish/refusal.ts).
 */
export async function loadBlueprintForRun(
  path: string,
  rules?: readonly CommandRule[],
  options: { recordRefusal?: { resultDir?: string } } = {},
): Promise<Blueprint> {
  const blueprint = await readBlueprintFile(resolve(path));
  const errors = auditBlueprint(blueprint, rules ? { commandRules: rules } : {}).filter((finding) => finding.severity === "error");
  if (errors.length > 0) {
    const first = errors[0]!;
    const refusedOnly = errors.every((finding) => finding.code === "COMMAND_FORBIDDEN");
    const resultDir = options.recordRefusal?.resultDir ?? blueprint.resultDir;
    const recorded = refusedOnly && options.recordRefusal !== undefined && (await recordRefusal(blueprint, resolve(resultDir), errors));
    throw new A3rError("BLUEPRINT_INVALID", `${errors.length} problem(s) in the blueprint, first: ${first.message}`, {
      where: `${first.file}:${first.line}`,
      hint: `${first.hint} (run \`a3r blueprint validate ${path}\` for all of them)${recorded ? `; recorded as refused in ${resolve(resultDir)}` : ""}`,
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
      return await ResultDirWriter.open(dir, owner, {
        ttlMs: settings.leaseTtlMs,
        staleMs: lockStaleMs,
        timeoutMs: 15_000,
        onForeignWrite: (write) => progress.event(`someone else wrote ${write.file} (${write.found}); the worker owns it and ${write.action}`),
      });
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
  const blueprint = await loadBlueprintForRun(options.blueprintPath, options.commandRules, {
    recordRefusal: options.resultDir === undefined ? {} : { resultDir: options.resultDir },
  });
  const resultDir = resolve(options.resultDir ?? blueprint.resultDir);
  await confineResultDir(resultDir, options.allowedRoots ?? ((await findCampaignOf(resultDir)) ? [dirname(resultDir)] : []));
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

  const finished = await finishedState(paths);
  if (finished) {
    progress.event(`${blueprint.id}: already finished (${finished}); a finished run is never run again (use a new result directory)`);
    return outcome(finished, { alreadyFinished: true });
  }
  let writer: ResultDirWriter | undefined;
  // Known once the run's memory is read: what to stop if the result directory fails us.
  let watched: RunContext | undefined;
  try {
    await mkdir(resultDir, { recursive: true });
    writer = await acquireWriter(resultDir, options.owner ?? `${hostname()}:${process.pid}`, settings, progress);
    // The worker whose lease we waited out may have finished the run meanwhile.
    const finishedMeanwhile = await finishedState(paths);
    if (finishedMeanwhile) {
      progress.event(`${blueprint.id}: finished (${finishedMeanwhile}) by the worker that held it; nothing to do`);
      return outcome(finishedMeanwhile, { alreadyFinished: true });
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
      ...(options.configSchemas?.[blueprint.mode] ? { configSchema: options.configSchemas[blueprint.mode] } : {}),
      ...sandboxOf(blueprint, options.sandbox ?? env.A3R_SANDBOX, env),
    };
    watched = context;
    const abandoned = await findStorageFailureRecord(resultDir);
    if (abandoned) return outcome("failed", await finishAbandoned(context, status, abandoned));
    const state = status?.state;
    if (state === "succeeded" || state === "failed" || state === "timed_out" || state === "cancelled" || state === "stopped_early") {
      // The previous worker died between the last status and finish.flag: finish its work.
      await finalizeRun(context, state, status?.reason ?? null, { alreadyTerminal: true });
      return outcome(state, { attempts: context.attempt, reason: status?.reason ?? null });
    }
    if (state === "awaiting_approval") {
      // The worker before this one died while a proposed command awaited a person: wait on.
      const next = await resumeAwaitingApproval(context, status as Record<string, unknown>);
      if (next.kind === "finished") return outcome(next.state, { attempts: context.attempt, reason: next.reason });
      const final = await loop(context, undefined);
      return outcome(final.state, { attempts: context.attempt, reason: final.reason });
    }
    if (state === "running" || state === "recovering") {
      const live = [];
      for (const record of context.memory.processes) if (await isRecordRunning(record)) live.push(record);
      const mainRecord = context.memory.processes[0];
      if (state === "running" && mainRecord && live.includes(mainRecord)) {
        await writer.appendEvent("worker.reattached", { attempt: context.attempt, pid: mainRecord.pid, pgid: mainRecord.pgid });
        progress.event(`${blueprint.id}: re-attached to attempt ${context.attempt} (pid ${mainRecord.pid}), not launching again`);
        const end = await supervise(context, await reattachSwarm(context), null, status?.heartbeatAt ?? null);
        const final = await loop(context, end);
        return outcome(final.state, { attempts: context.attempt, reattached: true, reason: final.reason });
      }
      if (state === "running") {
        // The run ended while nobody watched: judge it from its exit file and log.
        await writer.appendEvent("worker.found-ended", { attempt: context.attempt });
        const end = await supervise(context, await reattachSwarm(context), null, status?.heartbeatAt ?? null);
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
  } catch (error) {
    const failure = storageFailureOf(error, resultDir);
    if (!failure) throw error;
    throw await abandonRun(resultDir, watched, failure, settings);
  } finally {
    progress.done();
    await writer?.release().catch(() => false);
  }
}

/**
 * The worker cannot write its result directory: it stops every process of the run (the
 * training must never go on unwatched), tries to finish the run as `failed` in place (the
 * failure may be one file), and otherwise leaves the record next to the run folder for the
 * next worker. Returns the error the CLI prints (exit code 1).
 */
async function abandonRun(resultDir: string, context: RunContext | undefined, failure: NodeJS.ErrnoException, settings: WorkerSettings): Promise<A3rError> {
  const status = context ? undefined : await readRunStatus(resultDirPaths(resultDir).status).catch(() => undefined);
  const processes = context?.memory.processes ?? memoryFromStatus(status?.status, {}).processes;
  const stopped: StorageStopOutcome[] = [];
  // Clients first, as the supervisor stops them, so the server's last checkpoint is not disturbed.
  for (const record of [...processes].reverse())
    stopped.push({ role: record.role, pid: record.pid, outcome: await stopRecord(record, settings.gracePeriodMs) });
  for (const escaped of await stopEscapedProcesses(resultDir, settings.gracePeriodMs))
    stopped.push({ role: `escaped: ${escaped.command}`, pid: escaped.pid, outcome: escaped.outcome });
  const attempt = context?.attempt ?? status?.status?.attempt ?? 0;
  const record = storageFailureRecord(resultDir, attempt, failure, stopped.reverse());
  let finishedInPlace = false;
  if (context) {
    try {
      context.memory.history.push({ attempt, ending: record.reason });
      await finalizeRun(context, "failed", record.reason);
      finishedInPlace = true;
    } catch {
      // As expected when the whole folder is unwritable: the record below is the truth.
    }
  }
  const saved = finishedInPlace || (attempt === 0 && stopped.length === 0) ? null : await saveStorageFailureRecord(record);
  const where = finishedInPlace
    ? "the run is recorded as failed in its result directory"
    : saved
      ? `the run's end is recorded in ${saved} until the result directory can be written again`
      : attempt === 0 && stopped.length === 0
        ? "nothing had been launched"
        : "no fallback location could be written either (this message is the only record)";
  return new A3rError("RESULT_DIR_UNWRITABLE", `${record.reason}; ${where}`, {
    where: failure.path ?? resultDir,
    hint: "free space on the result directory's disk or fix its permissions, then run `a3r worker run` on the blueprint again: it finishes the run as failed from the record",
    cause: failure,
    details: { code: failure.code, attempt, stopped, record: saved },
  });
}

/** A previous worker stopped this run because it could not write here: finish it as failed, with its reason. */
async function finishAbandoned(
  context: RunContext,
  status: RunStatus | undefined,
  abandoned: { path: string; record: StorageFailureRecord },
): Promise<Partial<WorkerOutcome>> {
  const { writer, settings } = context;
  const { record } = abandoned;
  // The record says these were stopped; whatever is alive again is not allowed to run on.
  for (const process of context.memory.processes) if (await isRecordRunning(process)) await stopRecord(process, settings.gracePeriodMs);
  if (status === undefined) await writer.writeStatus({ state: "queued", host: hostname(), ...memoryFields(context.memory) });
  if (status === undefined || status.state === "queued") await writer.writeStatus({ state: "preparing" });
  // A folder that lost everything (a tmpfs gone with its mount) still says what was run.
  if (!(await pathExists(resultDirPaths(context.resultDir).blueprint))) await writer.writeBlueprint(await blueprintTextForCopy(context.blueprint.file!));
  const terminal = status?.state === "succeeded" || status?.state === "failed" || status?.state === "timed_out" || status?.state === "cancelled";
  const state: RunState = terminal ? status!.state : "failed";
  const reason = terminal ? (status?.reason ?? record.reason) : record.reason;
  context.attempt = Math.max(context.attempt, record.attempt);
  await writer.appendEvent("worker.storage-failure", {
    attempt: record.attempt,
    stoppedAt: record.time,
    error: record.error,
    stopped: record.stopped,
    record: abandoned.path,
  });
  if (!terminal) {
    await writer.appendAttempt({
      attempt: record.attempt,
      title: "stopped by the worker: it could not write the result directory",
      body: `${record.reason}.\n\nThe failed write: ${record.error.message}. Recorded at ${record.time} in ${abandoned.path}; finished from that record by the next worker.`,
    });
    context.memory.history.push({ attempt: record.attempt, ending: record.reason });
  }
  await finalizeRun(context, state, reason, terminal ? { alreadyTerminal: true } : {});
  await removeStorageFailureRecord(abandoned.path);
  return { attempts: context.attempt, reason };
}

/**
 * The final state when the run has finished: finish.flag, backed by a terminal status.json.
 * A flag beside a live status was written by someone else (the training program, in its own
 * result directory): the run is not over, and the writer removes that flag and reports it.
 */
async function finishedState(paths: ReturnType<typeof resultDirPaths>): Promise<RunState | undefined> {
  if (!(await pathExists(paths.finishFlag))) return undefined;
  const status = (await readRunStatus(paths.status).catch(() => undefined))?.status;
  if (status === undefined || !isTerminalRunState(status.state)) return undefined;
  return status.state;
}

/** The run's sandbox, or why it must not start (prepare() records it as a problem). */
function sandboxOf(blueprint: Blueprint, hostSetting: string | undefined, env: NodeJS.ProcessEnv): Pick<RunContext, "sandbox" | "sandboxRefusal"> {
  try {
    return { sandbox: decideSandbox(blueprint, hostSetting, env) };
  } catch (error) {
    if (error instanceof A3rError) return { sandboxRefusal: `[${error.code}] ${error.message} (${error.hint ?? ""})` };
    throw error;
  }
}

/** Checks paths, interpreter and config, copies the blueprint; false when the run failed here. */
async function prepare(context: RunContext, fresh: boolean): Promise<boolean> {
  const { blueprint, writer } = context;
  if (fresh) await writer.writeStatus({ state: "queued", host: hostname(), ...memoryFields(context.memory) });
  await writer.writeStatus({ state: "preparing", host: hostname() });
  await writer.appendEvent("run.preparing", { blueprint: blueprint.id, mode: blueprint.mode });
  await writer.writeBlueprint(await blueprintTextForCopy(blueprint.file!));
  const problems: string[] = context.sandboxRefusal ? [context.sandboxRefusal] : [];
  if (context.sandbox) {
    await writer.writeStatus({ sandbox: { mode: context.sandbox.mode, why: context.sandbox.why } });
    await writer.appendEvent("run.sandbox", { mode: context.sandbox.mode, why: context.sandbox.why, fellBack: context.sandbox.fellBack });
    if (context.sandbox.fellBack) context.progress.event(`${blueprint.id}: warning: not sandboxed: ${context.sandbox.why}`);
  }
  const isDirectory = await stat(blueprint.codebase).then(
    (info) => info.isDirectory(),
    () => false,
  );
  if (!isDirectory) problems.push(`the codebase ${blueprint.codebase} is not a folder`);
  if (!(await interpreterFound(blueprint.venv, process.env.PATH))) problems.push(`the interpreter or environment ${blueprint.venv} does not exist`);
  if (blueprint.config !== null) {
    try {
      await readConfigFile(blueprint.config);
      if (blueprint.mode === "swarm" && fresh) {
        const refusal = await swarmConfigRefusal(
          blueprint,
          context.resultDir,
          context.memory.overrides,
          context.configSchema ? { configSchema: context.configSchema } : {},
        );
        if (refusal) problems.push(refusal);
      }
    } catch (error) {
      problems.push((error as Error).message);
    }
  } else if (blueprint.mode === "swarm") {
    problems.push("a swarm blueprint needs a Configuration (the swarm.yaml of the server)");
  }
  const planRefusal = attemptPlanRefusal(attemptPlanInput(context, 1, false), context.commandRules);
  if (planRefusal) problems.push(planRefusal.message);
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

/** The plan input of one attempt of this run (without the swarm URL, known once its server is up). */
function attemptPlanInput(context: RunContext, attempt: number, resume: boolean) {
  return {
    blueprint: context.blueprint,
    resultDir: context.resultDir,
    settings: context.settings,
    attempt,
    overrides: context.memory.overrides,
    command: context.memory.command ?? context.blueprint.command,
    resume,
    configCopy: configCopyPath(context.resultDir, attempt, context.blueprint.config),
    ...(context.gpus === undefined ? {} : { gpus: context.gpus }),
    a3rBin,
    nodeExecutable: process.execPath,
  };
}

/** The hooks for a live swarm attempt found in status.json. */
async function reattachSwarm(context: RunContext): Promise<SwarmHooks | undefined> {
  if (context.blueprint.mode !== "swarm") return undefined;
  const server = context.memory.processes[0];
  // Sandboxed, the worker reaches the server through its relay (swarmUrl) and the clients
  // by the URL it printed inside their namespace; unconfined, the two are the same.
  const url = context.memory.swarmUrl ?? (server ? await readyUrlOf(server) : undefined);
  if (!url) return undefined;
  const clientUrl = (server ? await readyUrlOf(server) : undefined) ?? url;
  const plan = planAttempt({ ...attemptPlanInput(context, context.attempt, false), swarmUrl: clientUrl });
  // The live server's token, read back from its environment: restarted clients need it.
  const token = server ? swarmAdminTokenOf(server.pid) : undefined;
  if (token) context.swarmAdminToken = token;
  const env = processEnv(context.env, plan, context.blueprint.venv, envPassthroughOf(context.blueprint));
  const clientEnv = token ? { ...env, [swarmAdminTokenVariable]: token } : env;
  const confine = swarmClientConfine(context.sandbox, { blueprint: context.blueprint, resultDir: context.resultDir, env: clientEnv }, server, plan.cwd);
  return swarmHooks(url, clientRelauncher(context.attempt, resultDirPaths(context.resultDir).logs, plan.cwd, clientEnv, confine), token);
}

/** `unwatchedSince`: on re-attach, the dead worker's last heartbeat (what the run made after it is marked late). */
async function supervise(
  context: RunContext,
  swarm: SwarmHooks | undefined,
  oomKillsAtStart: number | null = null,
  unwatchedSince: string | null = null,
): Promise<AttemptEnd> {
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
    resultDir: context.resultDir,
    ...(unwatchedSince ? { unwatchedSince } : {}),
    runStartedAtMs: context.runStartedAtMs,
    attemptStartedAtMs: context.memory.attemptStartedAt ? Date.parse(context.memory.attemptStartedAt) : Date.now(),
    budgetMs: context.blueprint.timeBudgetMs,
    lastStep,
    metricsFileOffset: context.memory.metricsFileOffset,
    oomKillsAtStart,
    ...(context.signal ? { signal: context.signal } : {}),
    ...(metricName ? { metricName } : {}),
    lossMetrics: lossMetricsOf(context.blueprint.frontMatter),
    progress: context.progress,
    saveProcesses: async (records) => {
      context.memory.processes = records;
      await context.writer.writeStatus(memoryFields(context.memory));
    },
  });
}

/**
 * Before a launch: processes of this run still alive that no record names (a worker killed
 * between starting a trainer and writing status.json, or a helper that outlived its group)
 * are found by the run's tag (/proc/<pid>/environ, launch/run-tag.ts), stopped (TERM, grace,
 * KILL) and recorded (`run.strays-stopped`), so two trainers never share the run's log and
 * checkpoints.
 */
async function stopStrays(context: RunContext, attempt: number): Promise<void> {
  const strays = await stopEscapedProcesses(context.resultDir, context.settings.gracePeriodMs);
  if (strays.length === 0) return;
  await context.writer.appendEvent("run.strays-stopped", {
    attempt,
    processes: strays,
    why: "alive with the run's tag but in no record (a worker died between starting them and writing status.json); stopped before launching",
  });
  context.progress.event(
    `${context.blueprint.id}: before attempt ${attempt}, stopped ${strays.length} process(es) of this run that no record named: ${strays.map((stray) => `pid ${stray.pid} (${stray.command}) ${stray.outcome}`).join(", ")}`,
  );
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
  await stopStrays(context, attempt);
  // The run's metrics file is shared by the attempts: this one's lines start at its size now.
  memory.metricsFileOffset = await stat(context.settings.metricsFile).then(
    (info) => info.size,
    () => 0,
  );
  const oomKillsAtStart = readOomKillCount();
  const launched = await withHeartbeat(writer, context.settings.heartbeatIntervalMs, () =>
    launchAttempt(attemptPlanInput(context, attempt, resume), {
      baseEnv: context.env,
      readyTimeoutMs: context.settings.swarmReadyTimeoutMs,
      graceMs: context.settings.gracePeriodMs,
      ...(blueprint.mode === "swarm" ? { swarmAdminToken: (context.swarmAdminToken ??= newSwarmAdminToken()) } : {}),
      ...(context.configSchema ? { configSchema: context.configSchema } : {}),
      ...(context.commandRules ? { commandRules: context.commandRules } : {}),
      ...(context.sandbox ? { sandbox: context.sandbox } : {}),
      onProcesses: async (records) => {
        crashPoint("after-spawn");
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
    }),
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
    const tail = await readLogTail(launched.logFile);
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

/** Whether the run recorded anything a training run records: a step or a metric, in any attempt. */
async function hasTrainingSignal(resultDir: string): Promise<boolean> {
  return (await readMetrics(resultDirPaths(resultDir).metrics)).records.length > 0;
}

/**
 * A run that exited 0 before its planned steps (front matter `expected_steps`, or a
 * `max_steps` of the overrides or the configuration) stopped early: it is `failed: stopped
 * at step 3 of 20`, not a success, and finalizeRun does not judge its prediction. Undefined
 * when the run reached its plan or has none.
 */
async function endedShort(context: RunContext, detail: string): Promise<{ state: RunState; reason: string } | undefined> {
  const planned = await plannedStepsOfRun(context);
  const lastStep = lastStepOf((await readMetrics(resultDirPaths(context.resultDir).metrics)).records);
  const short = stoppedShortReason(planned, lastStep);
  if (!planned || !short) return undefined;
  const reason = `${short} (${detail}; ${planned.steps} planned by ${planned.source})`;
  context.memory.history.push({ attempt: context.attempt, ending: short });
  await context.writer.appendAttempt({
    attempt: context.attempt,
    title: short,
    body: `${reason}. An exit 0 before the planned steps is not a success: the run stopped early, and its prediction is not judged on the partial curve.`,
  });
  await context.writer.appendEvent("run.stopped-short", { attempt: context.attempt, step: lastStep, planned: planned.steps, source: planned.source, detail });
  await finalizeRun(context, "failed", reason);
  return { state: "failed", reason };
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
    if (current === undefined && context.attempt > 0) {
      // Between attempts (recovering): a stop request ends the run before a relaunch.
      const read = await readStopRequest(context.resultDir);
      if (read.kind === "request") {
        await context.writer.appendEvent("run.stop-requested", {
          attempt: context.attempt,
          state: read.request.state,
          reason: read.request.reason,
          evidence: read.request.evidence,
          step: null,
        });
        current = { kind: "stopped_early", detail: read.request.reason, evidence: read.request.evidence, lastStep: null };
      }
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
    if (ended.kind === "succeeded" && context.settings.requireTrainingSignal && !(await hasTrainingSignal(context.resultDir))) {
      // A program that trained nothing (wrong entry point, empty dataset, a flag typo that
      // only prints usage) must not be recorded as a result.
      const reason = `${ended.detail} without a training signal: no step and no metric was recorded in ${context.attempt} attempt(s)`;
      const said = context.blueprint.mode === "classic" ? "exited 0 without a training signal" : "finished without a training signal";
      context.memory.history.push({ attempt: context.attempt, ending: said });
      await context.writer.appendAttempt({
        attempt: context.attempt,
        title: said,
        body: `${reason}. Success needs at least one step or metric (log lines, $A3R_METRICS_FILE or the swarm server's /metrics); a blueprint whose run trains nothing says \`worker: { require_training_signal: false }\`.`,
      });
      await context.writer.appendEvent("run.no-training-signal", { attempt: context.attempt, detail: ended.detail });
      await finalizeRun(context, "failed", `${said} (${ended.detail}; no step and no metric recorded)`);
      return { state: "failed", reason: `${said} (${ended.detail}; no step and no metric recorded)` };
    }
    const short = ended.kind === "succeeded" ? await endedShort(context, ended.detail) : undefined;
    if (short) return short;
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
    if (ended.kind === "stopped_early") {
      const reason = `stopped early at step ${ended.lastStep ?? "none"} (attempt ${context.attempt}): ${ended.detail}; partial results kept`;
      context.memory.history.push({ attempt: context.attempt, ending: `stopped early (${ended.detail})` });
      await context.writer.appendAttempt({
        attempt: context.attempt,
        title: "stopped early on request",
        body: [
          `${reason}.`,
          `The campaign's early stopping asked for it (stop-request.json); the process group got TERM, then KILL after ${formatDuration(context.settings.gracePeriodMs)} if anything was left.`,
          "",
          "Evidence:",
          "",
          ...Object.entries(ended.evidence).map(([key, value]) => `- ${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`),
        ].join("\n"),
      });
      await finalizeRun(context, "stopped_early", reason);
      return { state: "stopped_early", reason };
    }
    if (ended.kind === "timed_out") {
      const reason = `${ended.detail} at step ${ended.lastStep ?? "none"} (attempt ${context.attempt}); partial results kept`;
      context.memory.history.push({ attempt: context.attempt, ending: `timed out (${ended.detail})` });
      const took = ended.stopped?.map((stop) => `${stop.role} (pid ${stop.pid}) ${stop.outcome}`).join(", ");
      await context.writer.appendAttempt({
        attempt: context.attempt,
        title: "stopped by the time budget",
        body: `${reason}. The process group got TERM, then KILL after ${formatDuration(context.settings.gracePeriodMs)} if anything was left${took ? `: ${took}` : ""}.`,
      });
      await context.writer.appendEvent("budget.hit", {
        attempt: context.attempt,
        budgetMs: context.blueprint.timeBudgetMs,
        step: ended.lastStep,
        ...(ended.stopped ? { stopped: ended.stopped } : {}),
      });
      await finalizeRun(context, "timed_out", reason);
      return { state: "timed_out", reason };
    }
    const next = await handleFailure(context, ended, {
      baseValues: context.blueprint.config ? baseValuesOf(await readConfigFile(context.blueprint.config).catch(() => ({})), context.configSchema) : {},
      hasCheckpoint: await hasCheckpoint(context.resultDir, context.blueprint.mode),
      freePort: await freePort(),
    });
    if (next.kind === "finished") return { state: next.state, reason: next.reason };
    resume = next.resume;
    current = undefined;
  }
}
