import type { ResultDirWriter } from "../../campaign/index.ts";
import { formatDuration } from "../../core/duration.ts";
import type { FailureFacts } from "../recover/failure-classifier.ts";
import { collectExit, isRecordRunning, stopRecord, type LaunchedProcessRecord } from "../launch/launched-process.ts";
import type { MetricPoint } from "./log-metrics.ts";
import { JsonlMetricSource, LogMetricSource, MetricMerger, nonFiniteValue, SwarmMetricSource, type MetricSource } from "./metric-sources.ts";
import type { ProgressReporter } from "./progress-reporter.ts";
import type { WorkerSettings } from "../worker-settings.ts";
import { oomKillerFact, readOomKillCount } from "./oom-kill-counter.ts";

/**
 * Watches one attempt until it ends, continuously (every poll interval, no backoff): reads
 * metrics, heartbeats, checks the processes, the time budget, the first-signal timeout and
 * stalls. It never decides recovery: it returns how the attempt ended, with the facts the
 * classifier needs. Swarm clients are the exception: a crashed client is restarted here,
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
  progress: ProgressReporter;
  /** Aborted when the run must be cancelled (the worker got SIGTERM or SIGINT). */
  signal?: AbortSignal;
  /** Persists the process list (status.json) after a client restart. */
  saveProcesses(records: LaunchedProcessRecord[]): Promise<void>;
  now?: () => number;
}

export type AttemptEnd =
  | { kind: "succeeded"; detail: string; lastStep: number | null }
  | { kind: "failed"; detail: string; facts: FailureFacts; lastStep: number | null }
  | { kind: "timed_out"; detail: string; lastStep: number | null }
  | { kind: "cancelled"; detail: string; lastStep: number | null };

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

  const stopAll = async () => {
    // Clients first, so the server's last checkpoint is not disturbed by new episodes.
    for (const record of [...options.processes].reverse()) await stopRecord(record, settings.gracePeriodMs);
  };
  const readMetrics = async (): Promise<MetricPoint[]> => {
    const points: MetricPoint[] = [];
    for (const source of sources) points.push(...(await source.poll()));
    for (const record of options.processes.slice(1)) await clientLog(record).poll();
    const fresh = merger.accept(points);
    for (const point of fresh) {
      await writer.appendMetrics({ step: point.step, attempt, ...point.values, ...(point.time ? { time: point.time } : {}) });
      lastMetrics = Object.fromEntries(Object.entries(point.values).filter(([, value]) => Number.isFinite(value)));
      lastProgressAt = now();
      nonFinite ??= nonFiniteValue(point);
    }
    return fresh;
  };
  const heartbeat = async (force: boolean) => {
    if (!force && now() - lastHeartbeatAt < settings.heartbeatIntervalMs) return;
    lastHeartbeatAt = now();
    await writer.heartbeat({ step: merger.lastStep, lastMetrics });
  };
  const end = async <T extends AttemptEnd>(result: T): Promise<T> => {
    await heartbeat(true);
    return result;
  };
  const tailOf = (source: LogMetricSource) => source.follower.recentText();
  const exitFacts = (exit: { exitCode: number | null; signal: NodeJS.Signals | null }) => {
    const oomKiller = oomKillerFact(options.oomKillsAtStart, readOomKillCount());
    return { exitCode: exit.exitCode, signal: exit.signal, ...(oomKiller ? { oomKiller } : {}) };
  };

  for (;;) {
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
      await stopAll();
      const facts: FailureFacts = { logTail: tailOf(mainLog), exitCode: null, signal: null, stalled: true };
      return end({
        kind: "failed",
        detail: `no training signal within the first-signal timeout (${formatDuration(settings.firstSignalTimeoutMs)})`,
        facts,
        lastStep: null,
      });
    }
    if (signalSeen && now() - lastProgressAt >= settings.stallTimeoutMs) {
      await stopAll();
      const facts: FailureFacts = { logTail: tailOf(mainLog), exitCode: null, signal: null, stalled: true };
      return end({
        kind: "failed",
        detail: `no new step for ${formatDuration(settings.stallTimeoutMs)} after step ${merger.lastStep} (stall)`,
        facts,
        lastStep: merger.lastStep,
      });
    }
    await sleep(settings.pollIntervalMs);
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
