import { readStopRequest, type ResultDirWriter } from "../../campaign/index.ts";
import { formatDuration } from "../../core/duration.ts";
import type { FailureFacts } from "../recover/failure-classifier.ts";
import { collectExit, isRecordRunning, stopRecord, type LaunchedProcessRecord } from "../launch/launched-process.ts";
import type { MetricPoint } from "./log-metrics.ts";
import { JsonlMetricSource, LogMetricSource, MetricMerger, SwarmMetricSource, type MetricSource } from "./metric-sources.ts";
import { nonFiniteMetrics } from "../recover/loss-metrics.ts";
import type { ProgressReporter } from "./progress-reporter.ts";
import type { WorkerSettings } from "../worker-settings.ts";
import { oomKillerFact, readOomKillCount } from "./oom-kill-counter.ts";
import { stopEscapedProcesses } from "../launch/run-tag.ts";

/**
 * Watches one attempt until it ends, continuously (every poll interval, no backoff): reads
 * metrics, heartbeats, checks the processes, a stop request (`stop-request.json`), the time
 * budget, the first-signal timeout and stalls. It never decides recovery: it returns how
 * the attempt ended, with the facts the classifier needs. Swarm clients are the exception: a crashed client is restarted here,
 * alone, because that is not a new attempt of the run.
 *
 * Example (classic, NaN): steps 1..5 recorded → step 6 has loss=NaN → group stopped →
 * `{kind: "failed", facts: {nonFiniteMetric: {step: 6, key: "loss"}}}`.
 */
export interface SwarmHooks {
  url: string;
  status(): Promise<{ engine_status: string; engine_status_detail: string; global_step: number }>;
  metrics(): Promise<Array<Record<string, number>>>;
  /** Starts a crashed client again (same command, next log file). */
  restartClient(record: LaunchedProcessRecord): Promise<LaunchedProcessRecord>;
}

export interface SuperviseOptions {
  writer: ResultDirWriter;
  attempt: number;
  mode: "classic" | "swarm";
  /** classic: [main]; swarm: [server, client-1, ...]; updated in place on client restarts. */
  processes: LaunchedProcessRecord[];
  swarm?: SwarmHooks;
  settings: WorkerSettings;
  runStartedAtMs: number;
  attemptStartedAtMs: number;
  budgetMs: number;
  /** /proc/vmstat oom_kill when the attempt was launched; null when unknown (re-attach). */
  oomKillsAtStart: number | null;
  /** The last step already recorded for this attempt (re-attach), or null. */
  lastStep: number | null;
  metricName?: string;
  /** Loss metrics the blueprint declares (`loss_metrics`); a non-finite value of any other metric is only a warning. */
  lossMetrics?: readonly string[];
  progress: ProgressReporter;
  /** Aborted when the run must be cancelled (the worker got SIGTERM or SIGINT). */
  signal?: AbortSignal;
  /** The result directory, whose run tag finds processes that left the groups (run-tag.ts); none = no sweep. */
  resultDir?: string;
  /**
   * Re-attach: the previous worker's last heartbeat. What the first poll finds beyond the
   * recorded steps was made while nobody watched; a point without its own time gets the
   * time this worker read it, so those steps are named in a `metrics.recorded-late` event.
   */
  unwatchedSince?: string;
  /** Persists the process list (status.json) after a client restart. */
  saveProcesses(records: LaunchedProcessRecord[]): Promise<void>;
  now?: () => number;
}

export type AttemptEnd =
  | { kind: "succeeded"; detail: string; lastStep: number | null }
  | { kind: "failed"; detail: string; facts: FailureFacts; lastStep: number | null }
  | { kind: "timed_out"; detail: string; lastStep: number | null }
  | { kind: "cancelled"; detail: string; lastStep: number | null }
  /** A stop request (`stop-request.json`, campaign/stop-request.ts) ended it; `evidence` is the requester's. */
  | { kind: "stopped_early"; detail: string; evidence: Record<string, unknown>; lastStep: number | null };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function superviseAttempt(options: SuperviseOptions): Promise<AttemptEnd> {
  const { writer, settings, attempt, progress } = options;
  const now = options.now ?? Date.now;
  const main = options.processes[0]!;
  const mainLog = new LogMetricSource(main.role, main.logFile, settings.logMetricPatterns, { parseMetrics: options.mode === "classic" });
  const sources: MetricSource[] = [mainLog, new JsonlMetricSource("metrics file", settings.metricsFile)];
  if (options.swarm) sources.push(new SwarmMetricSource(options.swarm.metrics));
  const clientLogs = new Map<string, LogMetricSource>();
  const clientLog = (record: LaunchedProcessRecord) => {
    const key = record.logFile;
    if (!clientLogs.has(key)) clientLogs.set(key, new LogMetricSource(record.role, record.logFile, [], { parseMetrics: false }));
    return clientLogs.get(key)!;
  };
  const merger = new MetricMerger(options.lastStep);
  const restarts = new Map<string, number>();
  const finishedClients = new Set<string>();
  let lastMetrics: Record<string, number> | null = null;
  let lastProgressAt = options.lastStep === null ? options.attemptStartedAtMs : now();
  let lastHeartbeatAt = 0;
  let nonFinite: { step: number; key: string } | undefined;
  const warnedNonFinite = new Set<string>();
  let invalidStopRequest: string | undefined;

  const stopAll = async () => {
    // Clients first, so the server's last checkpoint is not disturbed by new episodes.
    for (const record of [...options.processes].reverse()) await stopRecord(record, settings.gracePeriodMs);
  };
  // When the main log last grew, and the last step: what a stall report says was seen.
  let lastOutputAt: number | null = null;
  let backlogPending = options.unwatchedSince !== undefined;
  let lastStepAt: number | null = null;
  const readMetrics = async (): Promise<MetricPoint[]> => {
    const points: MetricPoint[] = [];
    const logBefore = mainLog.follower.position;
    for (const source of sources) points.push(...(await source.poll()));
    if (mainLog.follower.position !== logBefore) lastOutputAt = now();
    for (const record of options.processes.slice(1)) await clientLog(record).poll();
    const fresh = merger.accept(points);
    if (backlogPending) {
      backlogPending = false;
      const untimed = fresh.filter((point) => !point.time);
      if (untimed.length > 0) {
        await writer.appendEvent("metrics.recorded-late", {
          attempt,
          fromStep: untimed[0]!.step,
          toStep: untimed[untimed.length - 1]!.step,
          count: untimed.length,
          unwatchedSince: options.unwatchedSince ?? null,
          note: "made while no worker watched; their time is when the re-attached worker read them, not when the run made them",
        });
      }
    }
    for (const point of fresh) {
      await writer.appendMetrics({ step: point.step, attempt, ...point.values, ...(point.time ? { time: point.time } : {}) });
      lastMetrics = Object.fromEntries(Object.entries(point.values).filter(([, value]) => Number.isFinite(value)));
      lastProgressAt = now();
      lastStepAt = now();
      // Only a non-finite loss stops the run; other non-finite metrics are warnings (worker/recover/loss-metrics.ts).
      const { loss, other } = nonFiniteMetrics(point.values, options.lossMetrics);
      if (loss.length > 0) nonFinite ??= { step: point.step, key: loss[0]! };
      for (const key of other) {
        if (warnedNonFinite.has(key)) continue;
        warnedNonFinite.add(key);
        await writer.appendEvent("metric.non-finite", { attempt, step: point.step, key, counted: false, why: "not a loss metric" });
        progress.event(`warning: metric ${key} was not finite at step ${point.step} (not a loss metric, training goes on)`);
      }
    }
    return fresh;
  };
  const heartbeat = async (force: boolean) => {
    if (!force && now() - lastHeartbeatAt < settings.heartbeatIntervalMs) return;
    lastHeartbeatAt = now();
    await writer.heartbeat({ step: merger.lastStep, lastMetrics });
  };
  const end = async <T extends AttemptEnd>(result: T): Promise<T> => {
    if (options.resultDir) {
      // What left the process groups (setsid) is found by the run's tag, stopped and reported.
      const escaped = await stopEscapedProcesses(options.resultDir, settings.gracePeriodMs);
      if (escaped.length > 0) {
        await writer.appendEvent("run.escaped-processes", { attempt, processes: escaped });
        progress.event(
          `attempt ${attempt}: ${escaped.length} process(es) had left the run's process group and were stopped: ${escaped.map((found) => `pid ${found.pid} (${found.command}) ${found.outcome}`).join(", ")}`,
        );
      }
    }
    await heartbeat(true);
    return result;
  };
  const tailOf = (source: LogMetricSource) => source.follower.recentText();
  const outputSeen = () =>
    mainLog.follower.position === 0
      ? `the ${main.role} log is empty`
      : `the ${main.role} log has ${mainLog.follower.position} bytes${lastOutputAt === null ? "" : `, last written ${formatDuration(now() - lastOutputAt)} ago`}`;
  const exitFacts = (exit: { exitCode: number | null; signal: NodeJS.Signals | null }) => {
    const oomKiller = oomKillerFact(options.oomKillsAtStart, readOomKillCount());
    return { exitCode: exit.exitCode, signal: exit.signal, ...(oomKiller ? { oomKiller } : {}) };
  };

  for (;;) {
    // The run's program may write into its result directory: what it does to the files the
    // worker owns is undone and reported (an event), never a reason to stop watching.
    await writer.guardOwnedFiles();
    const fresh = await readMetrics();
    await heartbeat(fresh.length > 0 && now() - lastHeartbeatAt >= Math.min(1000, settings.heartbeatIntervalMs));
    const metricValue = options.metricName ? (lastMetrics as Record<string, number> | null)?.[options.metricName] : undefined;
    progress.progress({
      attempt,
      step: merger.lastStep,
      ...(options.metricName ? { metricName: options.metricName } : {}),
      ...(metricValue === undefined ? {} : { metricValue }),
      elapsedMs: now() - options.runStartedAtMs,
      budgetMs: options.budgetMs,
    });

    if (nonFinite) {
      await stopAll();
      const facts: FailureFacts = { logTail: tailOf(mainLog), exitCode: null, signal: null, nonFiniteMetric: nonFinite };
      return end({ kind: "failed", detail: `metric ${nonFinite.key} was not finite at step ${nonFinite.step}`, facts, lastStep: merger.lastStep });
    }
    if (options.signal?.aborted) {
      await stopAll();
      await readMetrics();
      return end({ kind: "cancelled", detail: `cancelled (${String(options.signal.reason ?? "aborted")})`, lastStep: merger.lastStep });
    }
    const stop = await stopRequested();
    if (stop) {
      // Recorded before the stop, so the evidence survives a worker killed while stopping.
      await writer.appendEvent("run.stop-requested", { attempt, state: stop.state, reason: stop.reason, evidence: stop.evidence, step: merger.lastStep });
      progress.event(`attempt ${attempt}: stop requested (${stop.reason}); stopping the run's processes`);
      await stopAll();
      await readMetrics();
      return end({ kind: "stopped_early", detail: stop.reason, evidence: stop.evidence, lastStep: merger.lastStep });
    }
    if (now() - options.runStartedAtMs >= options.budgetMs) {
      await stopAll();
      await readMetrics();
      return end({ kind: "timed_out", detail: `time budget ${formatDuration(options.budgetMs)} used up`, lastStep: merger.lastStep });
    }

    if (options.mode === "classic") {
      if (!(await isRecordRunning(main))) {
        const exit = await collectExit(main, settings.gracePeriodMs);
        await readMetrics();
        if (nonFinite) continue;
        if (exit.exitCode === 0) return end({ kind: "succeeded", detail: "the command exited 0", lastStep: merger.lastStep });
        const facts: FailureFacts = { logTail: tailOf(mainLog), ...exitFacts(exit) };
        return end({
          kind: "failed",
          detail: exit.signal ? `the command was killed by ${exit.signal}` : `the command exited ${exit.exitCode}`,
          facts,
          lastStep: merger.lastStep,
        });
      }
    } else {
      const swarmEnd = await checkSwarm();
      if (swarmEnd) return end(swarmEnd);
    }

    const signalSeen = merger.lastStep !== null;
    if (!signalSeen && now() - options.attemptStartedAtMs >= settings.firstSignalTimeoutMs) {
      const limit = formatDuration(settings.firstSignalTimeoutMs);
      const seen = `${formatDuration(now() - options.attemptStartedAtMs)} after launch no step or metric was seen; ${outputSeen()}`;
      await stopAll();
      const detail = `no training signal within the first-signal timeout (${limit}): rule first_signal_timeout = ${limit} fired; ${seen}`;
      const facts: FailureFacts = { logTail: tailOf(mainLog), exitCode: null, signal: null, stalled: true, stallDetail: detail };
      return end({
        kind: "failed",
        detail,
        facts,
        lastStep: null,
      });
    }
    if (signalSeen && now() - lastProgressAt >= settings.stallTimeoutMs) {
      const limit = formatDuration(settings.stallTimeoutMs);
      const stepAgo = lastStepAt === null ? "before this worker watched" : `${formatDuration(now() - lastStepAt)} ago`;
      const seen = `step ${merger.lastStep} was the last, recorded ${stepAgo}; ${outputSeen()}`;
      await stopAll();
      const detail = `no new step for ${limit} after step ${merger.lastStep} (stall): rule worker.stall_timeout = ${limit} fired; ${seen}`;
      const facts: FailureFacts = { logTail: tailOf(mainLog), exitCode: null, signal: null, stalled: true, stallDetail: detail };
      return end({
        kind: "failed",
        detail,
        facts,
        lastStep: merger.lastStep,
      });
    }
    await sleep(settings.pollIntervalMs);
  }

  /** The stop request in the result directory, if a valid one is there; an invalid one is reported once and ignored. */
  async function stopRequested() {
    if (!options.resultDir) return undefined;
    const read = await readStopRequest(options.resultDir);
    if (read.kind === "request") return read.request;
    if (read.kind === "invalid" && read.problem !== invalidStopRequest) {
      invalidStopRequest = read.problem;
      await writer.appendEvent("run.stop-request-invalid", { attempt, problem: read.problem });
      progress.event(`warning: ${read.problem}; the run goes on (a stop request is {"state": "stopped_early", "reason": "..."})`);
    }
    return undefined;
  }

  async function checkSwarm(): Promise<AttemptEnd | undefined> {
    const swarm = options.swarm!;
    if (!(await isRecordRunning(main))) {
      const exit = await collectExit(main, settings.gracePeriodMs);
      await stopAll();
      const facts: FailureFacts = {
        logTail: tailOf(mainLog),
        ...exitFacts(exit),
        ...(exit.signal === null && exit.exitCode === 0 ? { signal: "SIGTERM" as const } : {}),
      };
      return { kind: "failed", detail: `the swarm server stopped (${exit.signal ?? `exit ${exit.exitCode}`})`, facts, lastStep: merger.lastStep };
    }
    const engine = await swarm.status().catch(() => undefined);
    if (engine?.engine_status === "ENGINE.OFFLINE" && engine.engine_status_detail.startsWith("finished")) {
      await readMetrics();
      await stopAll();
      return { kind: "succeeded", detail: `the swarm server reports ${engine.engine_status_detail}`, lastStep: merger.lastStep };
    }
    for (let index = 1; index < options.processes.length; index += 1) {
      const record = options.processes[index]!;
      if (finishedClients.has(record.role) || (await isRecordRunning(record))) continue;
      const exit = await collectExit(record, settings.gracePeriodMs);
      if (exit.exitCode === 0) {
        finishedClients.add(record.role);
        await writer.appendEvent("client.finished", { attempt, role: record.role });
        continue;
      }
      const used = restarts.get(record.role) ?? 0;
      const tail = (await clientLog(record).poll(), tailOf(clientLog(record)));
      if (used >= settings.maxClientRestarts) {
        await stopAll();
        const facts: FailureFacts = { logTail: tail, ...exitFacts(exit) };
        return {
          kind: "failed",
          detail: `swarm ${record.role} failed ${used + 1} times (${exit.signal ?? `exit ${exit.exitCode}`})`,
          facts,
          lastStep: merger.lastStep,
        };
      }
      restarts.set(record.role, used + 1);
      const replacement = await swarm.restartClient(record);
      options.processes[index] = replacement;
      await options.saveProcesses(options.processes);
      await writer.appendEvent("client.restarted", {
        attempt,
        role: record.role,
        exit: exit.signal ?? exit.exitCode,
        restart: used + 1,
        pid: replacement.pid,
        log: replacement.logFile,
      });
      progress.event(
        `swarm ${record.role} ended (${exit.signal ?? `exit ${exit.exitCode}`}); restarted it alone (restart ${used + 1} of ${settings.maxClientRestarts})`,
      );
    }
    const clients = options.processes.slice(1);
    if (clients.length > 0 && clients.every((record) => finishedClients.has(record.role))) {
      await readMetrics();
      await stopAll();
      return { kind: "succeeded", detail: "every swarm client finished its episodes", lastStep: merger.lastStep };
    }
    return undefined;
  }
}
