import type { LineSink } from "./line-splitter.ts";
import { drainBudget, LogFollower, pollBudget, type ReadBudget } from "./log-follower.ts";
import { compileLogMetricPatterns, parseMetricLine, type CompiledPatterns, type LogMetricPattern, type MetricPoint } from "../rules/log-metrics.ts";
import { parsePythonJson } from "../../core/python-json.ts";

/**
 * Where training signal comes from: a log file (lines parsed by patterns), a JSONL file
 * the run writes, or a swarm server's `/metrics`. Each source returns the points it saw
 * since its last poll; `MetricMerger` keeps the ones with a new step.
 *
 * Left out: heartbeats, stalls and failures (the supervisor decides those from the points).
 */
export interface MetricSource {
  readonly name: string;
  poll(): Promise<MetricPoint[]>;
}

/** Log lines through the configured patterns; also keeps the tail for the classifier. */
export class LogMetricSource implements MetricSource {
  readonly follower: LogFollower;
  private readonly compiled: CompiledPatterns;

  constructor(
    readonly name: string,
    path: string,
    patterns: LogMetricPattern[],
    options: { parseMetrics?: boolean; capBytes?: number; capLabel?: string } = {},
  ) {
    this.follower = new LogFollower(path, { capBytes: options.capBytes, capLabel: options.capLabel });
    this.compiled = compileLogMetricPatterns(patterns);
    this.parseMetrics = options.parseMetrics ?? true;
  }

  private readonly parseMetrics: boolean;

  /** One poll's share of the log (pollBudget): a flood is read over several polls. */
  async poll(budget: ReadBudget = pollBudget): Promise<MetricPoint[]> {
    const points: MetricPoint[] = [];
    await this.follower.read(this.sink(points), budget);
    return points;
  }

  /** Everything left, the unterminated last line included: the process has ended. */
  async drain(): Promise<MetricPoint[]> {
    const points: MetricPoint[] = [];
    const sink = this.sink(points);
    do await this.follower.read(sink, drainBudget);
    while (this.follower.behind);
    this.follower.finish(sink);
    return points;
  }

  private sink(points: MetricPoint[]): LineSink {
    if (!this.parseMetrics) return () => {};
    return (line) => {
      const point = parseMetricLine(line, this.compiled);
      if (point) points.push(point);
    };
  }
}

/**
 * A JSONL metrics file: `{"step": 3, "loss": 0.2, ...}` per line. One file serves every
 * attempt: `offset` is where this attempt's lines start (an earlier attempt's NaN at step 4
 * is not the resumed attempt's step 4).
 */
export class JsonlMetricSource implements MetricSource {
  private readonly follower: LogFollower;

  constructor(
    readonly name: string,
    path: string,
    offset = 0,
  ) {
    this.follower = new LogFollower(path, { tailLines: 5, offset });
  }

  async poll(): Promise<MetricPoint[]> {
    const lines = await this.follower.poll();
    // JSON lines only: parseMetricLine with no patterns reads a line as JSON or not at all;
    // a line JSON.parse refuses may be Python's (`NaN`, `Infinity`): a NaN loss must be seen.
    return lines.map((line) => parseMetricLine(line, { patterns: [] }) ?? pythonJsonPoint(line)).filter((point): point is MetricPoint => point !== undefined);
  }
}

/** A JSON line as Python's json.dumps writes it (`{"step": 3, "loss": NaN}`), or undefined. */
export function pythonJsonPoint(line: string): MetricPoint | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith("{") || !trimmed.endsWith("}")) return undefined;
  let record: unknown;
  try {
    record = parsePythonJson(trimmed);
  } catch {
    return undefined;
  }
  if (typeof record !== "object" || record === null || Array.isArray(record)) return undefined;
  const fields = record as Record<string, unknown>;
  const step = fields.step ?? fields.global_step;
  if (typeof step !== "number" || !Number.isInteger(step) || step < 0) return undefined;
  const values: Record<string, number> = {};
  for (const [key, value] of Object.entries(fields))
    if (key !== "step" && key !== "global_step" && key !== "time" && typeof value === "number") values[key] = value;
  return { step, values };
}

/** A swarm server's step metrics; the whole list comes back each time, the merger dedupes. */
export class SwarmMetricSource implements MetricSource {
  readonly name = "swarm /metrics";

  constructor(private readonly fetchMetrics: () => Promise<Array<Record<string, number>>>) {}

  async poll(): Promise<MetricPoint[]> {
    let records: Array<Record<string, number>>;
    try {
      records = await this.fetchMetrics();
    } catch {
      // An unreachable server is the process check's business, not a metrics failure.
      return [];
    }
    const points: MetricPoint[] = [];
    for (const record of records) {
      const step = record.step;
      if (typeof step !== "number" || !Number.isInteger(step) || step < 0) continue;
      const values: Record<string, number> = {};
      for (const [key, value] of Object.entries(record)) if (key !== "step" && key !== "time" && typeof value === "number") values[key] = value;
      // The server stamps each step in Unix seconds: keep it, so a re-attached worker records true times.
      const time = typeof record.time === "number" && Number.isFinite(record.time) ? new Date(record.time * 1000).toISOString() : undefined;
      points.push({ step, values, ...(time ? { time } : {}) });
    }
    return points;
  }
}

/**
 * Keeps only points with a step beyond the last one recorded for this attempt, merging
 * values that several sources report for the same step. Pure apart from its memory.
 */
export class MetricMerger {
  constructor(public lastStep: number | null = null) {}

  accept(points: MetricPoint[]): MetricPoint[] {
    const byStep = new Map<number, MetricPoint>();
    for (const point of points) {
      if (this.lastStep !== null && point.step <= this.lastStep) continue;
      const seen = byStep.get(point.step);
      const time = seen?.time ?? point.time;
      byStep.set(point.step, { step: point.step, values: { ...(seen?.values ?? {}), ...point.values }, ...(time ? { time } : {}) });
    }
    const fresh = [...byStep.values()].sort((a, b) => a.step - b.step);
    const last = fresh[fresh.length - 1];
    if (last) this.lastStep = last.step;
    return fresh;
  }
}

/** The first non-finite value of a point, if any. */
export function nonFiniteValue(point: MetricPoint): { step: number; key: string } | undefined {
  for (const [key, value] of Object.entries(point.values)) if (!Number.isFinite(value)) return { step: point.step, key };
  return undefined;
}
