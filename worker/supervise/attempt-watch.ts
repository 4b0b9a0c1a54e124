import { formatDuration } from "../../core/duration.ts";
import { stopRecord, type LaunchedProcessRecord } from "../launch/launched-process.ts";
import { stopEscapedProcesses } from "../launch/run-tag.ts";
import { nonFiniteMetrics } from "../rules/loss-metrics.ts";
import type { MetricPoint } from "../rules/log-metrics.ts";
import { JsonlMetricSource, LogMetricSource, MetricMerger, SwarmMetricSource, type MetricSource } from "./metric-sources.ts";
import { LogNotices } from "./log-notices.ts";
import { oomKillerFact, readOomKillCount } from "./oom-kill-counter.ts";
import type { AttemptEnd, SuperviseOptions } from "./supervise-options.ts";

/**
 * What the supervision of one attempt knows between polls (the metric sources, the last
 * step and when it came, the first non-finite loss, when the main log last grew) and the
 * actions its checks share: read the metrics, heartbeat, stop every process group, end the
 * attempt, describe what was seen. The checks (`check-*.ts`) decide; this only keeps the record.
 */
export class AttemptWatch {
  readonly options: SuperviseOptions;
  readonly now: () => number;
  /** classic: the command; swarm: the server. */
  readonly main: LaunchedProcessRecord;
  readonly mainLog: LogMetricSource;
  readonly merger: MetricMerger;
  private readonly sources: MetricSource[];
  private readonly clientLogs = new Map<string, LogMetricSource>();
  /** The finite values of the last recorded point (heartbeat, progress line). */
  lastMetrics: Record<string, number> | null = null;
  /** When the last new step was recorded (the attempt's start before any, on a fresh launch): the stall clock. */
  lastProgressAt: number;
  lastHeartbeatAt = 0;
  /** The first non-finite loss seen (only a loss stops the run, worker/rules/loss-metrics.ts). */
  nonFinite: { step: number; key: string } | undefined;
  private readonly warnedNonFinite = new Set<string>();
  /** When the main log last grew while this worker watched: what a stall report says was seen. */
  lastOutputAt: number | null = null;
  /** When this worker last recorded a step; null when none yet (the last one came before it watched). */
  lastStepAt: number | null = null;
  /** Re-attach: the first read still has to name what was made while nobody watched. */
  private backlogPending: boolean;
  /** What the first read of the current poll found (the heartbeat check's cue). */
  freshThisPoll: MetricPoint[] = [];

  constructor(options: SuperviseOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.main = options.processes[0]!;
    this.mainLog = new LogMetricSource(this.main.role, this.main.logFile, options.settings.logMetricPatterns, {
      parseMetrics: options.mode === "classic",
      ...this.capOf(),
    });
    this.logNotices = new LogNotices(options.attempt, options.settings.logCap);
    this.sources = [this.mainLog, new JsonlMetricSource("metrics file", options.settings.metricsFile, options.metricsFileOffset ?? 0)];
    if (options.swarm) this.sources.push(new SwarmMetricSource(options.swarm.metrics));
    this.merger = new MetricMerger(options.lastStep);
    this.lastProgressAt = options.lastStep === null ? options.attemptStartedAtMs : this.now();
    this.backlogPending = options.unwatchedSince !== undefined;
  }

  /** The log source of a swarm client (its tail, for a failure report), one per log file. */
  clientLog(record: LaunchedProcessRecord): LogMetricSource {
    const key = record.logFile;
    if (!this.clientLogs.has(key)) this.clientLogs.set(key, new LogMetricSource(record.role, record.logFile, [], { parseMetrics: false, ...this.capOf() }));
    return this.clientLogs.get(key)!;
  }

  private capOf() {
    return { capBytes: this.options.settings.logCapBytes, capLabel: this.options.settings.logCap };
  }

  /** A log still has unread output (a flood read over several polls): the next poll comes at once, and no stall is judged. */
  get readingBehind(): boolean {
    return this.mainLog.follower.behind || [...this.clientLogs.values()].some((source) => source.follower.behind);
  }

  /**
   * Polls every source, records the points with a new step (metrics.jsonl), names the steps a
   * re-attached worker found late, notes the first non-finite loss and warns once per other
   * non-finite metric. Returns the new points.
   */
  async readMetrics(how: { drain?: boolean } = {}): Promise<MetricPoint[]> {
    const options = this.options;
    const { writer, attempt, progress } = options;
    const points: MetricPoint[] = [];
    const logBefore = this.mainLog.follower.bytesRead;
    // After an exit the logs are read to their end, their last unterminated line included, before anything is judged.
    for (const source of this.sources) points.push(...(await (how.drain && source instanceof LogMetricSource ? source.drain() : source.poll())));
    if (this.mainLog.follower.bytesRead !== logBefore) this.lastOutputAt = this.now();
    for (const record of options.processes.slice(1)) await (how.drain ? this.clientLog(record).drain() : this.clientLog(record).poll());
    // A backlog being read is progress, not a hang: the stall clock waits until the reader has caught up.
    if (this.readingBehind) this.lastProgressAt = this.now();
    await this.noticeLogs();
    const fresh = this.merger.accept(points);
    if (this.backlogPending) {
      this.backlogPending = false;
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
      this.lastMetrics = Object.fromEntries(Object.entries(point.values).filter(([, value]) => Number.isFinite(value)));
      this.lastProgressAt = this.now();
      this.lastStepAt = this.now();
      // Only a non-finite loss stops the run; other non-finite metrics are warnings (worker/rules/loss-metrics.ts).
      const { loss, other } = nonFiniteMetrics(point.values, options.lossMetrics);
      if (loss.length > 0) this.nonFinite ??= { step: point.step, key: loss[0]! };
      for (const key of other) {
        if (this.warnedNonFinite.has(key)) continue;
        this.warnedNonFinite.add(key);
        await writer.appendEvent("metric.non-finite", { attempt, step: point.step, key, counted: false, why: "not a loss metric" });
        progress.event(`warning: metric ${key} was not finite at step ${point.step} (not a loss metric, training goes on)`);
      }
    }
    return fresh;
  }

  private readonly logNotices: LogNotices;

  private async noticeLogs(): Promise<void> {
    const sink = {
      event: (kind: string, fields: Record<string, unknown>) => this.options.writer.appendEvent(kind, fields),
      say: (line: string) => this.options.progress.event(line),
    };
    for (const source of [this.mainLog, ...this.clientLogs.values()]) await this.logNotices.afterRead(source, sink);
  }

  /** Writes a heartbeat (status.json) when one is due, or at once when forced. */
  async heartbeat(force: boolean): Promise<void> {
    if (!force && this.now() - this.lastHeartbeatAt < this.options.settings.heartbeatIntervalMs) return;
    this.lastHeartbeatAt = this.now();
    await this.options.writer.heartbeat({ step: this.merger.lastStep, lastMetrics: this.lastMetrics });
  }

  /** Stops every process group of the attempt (TERM, grace, KILL). */
  async stopAll(): Promise<void> {
    // Clients first, so the server's last checkpoint is not disturbed by new episodes.
    for (const record of [...this.options.processes].reverse()) await stopRecord(record, this.options.settings.gracePeriodMs);
  }

  /** Every end goes through here: the run's escaped processes are stopped and reported, and a last heartbeat is written. */
  async end<T extends AttemptEnd>(result: T): Promise<T> {
    const { writer, attempt, progress, settings, resultDir } = this.options;
    if (resultDir) {
      // What left the process groups (setsid) is found by the run's tag, stopped and reported.
      const escaped = await stopEscapedProcesses(resultDir, settings.gracePeriodMs);
      if (escaped.length > 0) {
        await writer.appendEvent("run.escaped-processes", { attempt, processes: escaped });
        progress.event(
          `attempt ${attempt}: ${escaped.length} process(es) had left the run's process group and were stopped: ${escaped.map((found) => `pid ${found.pid} (${found.command}) ${found.outcome}`).join(", ")}`,
        );
      }
    }
    for (const source of [this.mainLog, ...this.clientLogs.values()]) await source.follower.compact();
    await this.logNotices.atEnd([this.mainLog, ...this.clientLogs.values()], {
      event: (kind, fields) => writer.appendEvent(kind, fields),
      say: (line) => progress.event(line),
    });
    await this.heartbeat(true);
    return result;
  }

  /** The recent text of a log, for the classifier. */
  tailOf(source: LogMetricSource): string {
    return source.follower.recentText();
  }

  /** What the main log showed, in words (a first-signal or stall report). */
  outputSeen(): string {
    const main = this.main;
    const position = this.mainLog.follower.bytesRead;
    return position === 0
      ? `the ${main.role} log is empty`
      : `the ${main.role} log has ${position} bytes${this.lastOutputAt === null ? "" : `, last written ${formatDuration(this.now() - this.lastOutputAt)} ago`}`;
  }

  /** The facts of a process's exit, with the OOM killer's when the machine's counter moved since the launch. */
  exitFacts(exit: { exitCode: number | null; signal: NodeJS.Signals | null }) {
    const oomKiller = oomKillerFact(this.options.oomKillsAtStart, readOomKillCount());
    return { exitCode: exit.exitCode, signal: exit.signal, ...(oomKiller ? { oomKiller } : {}) };
  }
}
