import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import type { Blueprint } from "../../blueprints/index.ts";
import { A3rError } from "../../core/errors.ts";
import { parseDuration } from "../../core/duration.ts";
import { defaultLogMetricPatterns, type LogMetricPattern } from "./log-metrics.ts";
import type { Overrides } from "../../blueprints/index.ts";
import { defaultPlaybook, type PlaybookEntry } from "./recovery-playbook.ts";
import type { FailureClass } from "./failure-classifier.ts";

/**
 * Every timing knob of the supervisor, read from the blueprint's front matter so a test or
 * a demo can run in seconds and a real run can wait hours. Front matter:
 *
 * ```yaml
 * first_signal_timeout: 20m         # no training signal by then = failed start
 * metrics_file: out/metrics.jsonl   # a JSONL file the run writes (relative to the codebase)
 * env: { NCCL_DEBUG: WARN }          # extra environment for the run
 * worker:
 *   poll_interval: 1s                # how often logs, files, processes and /metrics are read
 *   heartbeat_interval: 10s          # status.json heartbeat (renews the lease)
 *   stall_timeout: 30m               # no new step for this long = hang
 *   grace_period: 30s                # TERM, then KILL after this
 *   lease_ttl: 1m                    # a dead worker's lease expires after this (a restarted worker waits this long)
 *   swarm_ready_timeout: 2m          # swarm server must print its URL by then
 *   max_client_restarts: 5           # per swarm client, per attempt
 *   api_backoff: [30s, 2m, 8m]        # waits before retrying after an external API rate limit or auth error
 *   log_metric_patterns: [{ name, line, pair }]   # added before the defaults
 *   require_training_signal: true    # exit 0 with no step and no metric at all is `failed`; false for a run that trains nothing
 *   log_cap: 64MiB                   # each attempt's log file is kept under this: once read, its middle is cut (worker/supervise/log-cap.ts)
 * ```
 *
 * Left out: the recovery playbook (worker/rules/recovery-playbook.ts) and the LLM (environment).
 */
export interface WorkerSettings {
  pollIntervalMs: number;
  heartbeatIntervalMs: number;
  firstSignalTimeoutMs: number;
  stallTimeoutMs: number;
  gracePeriodMs: number;
  leaseTtlMs: number;
  swarmReadyTimeoutMs: number;
  maxClientRestarts: number;
  /** Absolute path of the metrics JSONL file the run writes (also given as A3R_METRICS_FILE). */
  metricsFile: string;
  logMetricPatterns: LogMetricPattern[];
  /** Extra environment for the run, from front matter `env`. */
  env: Record<string, string>;
  /** The blueprint's starting overrides (front matter `overrides`). */
  overrides: Overrides;
  /** Success needs at least one recorded step or metric (front matter `worker.require_training_signal`, default true). */
  requireTrainingSignal: boolean;
  /** Each attempt's log file is kept under this many bytes (front matter `worker.log_cap`, default 64 MiB). */
  logCapBytes: number;
  /** The cap as written (`64MiB`), for the marker line and the events. */
  logCap: string;
  /** The recovery playbook, with `api_backoff` applied to the external-API entries. */
  playbook: Record<FailureClass, PlaybookEntry>;
}

export const defaultWorkerSettings = {
  pollIntervalMs: 1_000,
  heartbeatIntervalMs: 10_000,
  firstSignalTimeoutMs: 20 * 60_000,
  stallTimeoutMs: 30 * 60_000,
  gracePeriodMs: 30_000,
  leaseTtlMs: 60_000,
  swarmReadyTimeoutMs: 120_000,
  maxClientRestarts: 5,
} as const;

const duration = z.union([z.string(), z.number()]).refine((value) => parseDuration(value) !== undefined, "a duration such as 500ms, 5s, 20m or 4h");

const workerBlockSchema = z.strictObject({
  poll_interval: duration.optional(),
  heartbeat_interval: duration.optional(),
  stall_timeout: duration.optional(),
  grace_period: duration.optional(),
  lease_ttl: duration.optional(),
  swarm_ready_timeout: duration.optional(),
  max_client_restarts: z.int().nonnegative().optional(),
  api_backoff: z.array(duration).min(1).optional(),
  log_metric_patterns: z.array(z.strictObject({ name: z.string().min(1), line: z.string().min(1), pair: z.string().min(1) })).optional(),
  require_training_signal: z.boolean().optional(),
  log_cap: z
    .union([z.string(), z.number()])
    .refine((value) => (parseByteSize(value) ?? 0) >= minLogCapBytes, "a size of at least 64KiB, such as 64MiB, 512KiB or 1GiB")
    .optional(),
});

/** The smallest cap: a quarter of it (the kept head) must hold a few filesystem blocks. */
const minLogCapBytes = 64 * 1024;
const defaultLogCap = "64MiB";
const byteUnits: Record<string, number> = { "": 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3 };

/** `64MiB`, `512 KiB`, `1GB`, `4096` (bytes) → bytes; undefined when it is not a size. */
export function parseByteSize(value: string | number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]{0,3})\s*$/i.exec(value);
  const unit = match ? byteUnits[match[2]!.toLowerCase()] : undefined;
  return match && unit !== undefined ? Math.floor(Number(match[1]) * unit) : undefined;
}

const overrideValue = z.union([z.string(), z.number(), z.boolean()]);

const frontMatterPartSchema = z.looseObject({
  first_signal_timeout: duration.optional(),
  metrics_file: z.string().min(1).optional(),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"), z.union([z.string(), z.number(), z.boolean()])).optional(),
  overrides: z.record(z.string(), overrideValue).optional(),
  worker: workerBlockSchema.optional(),
});

const ms = (value: string | number | undefined, fallback: number): number => (value === undefined ? fallback : (parseDuration(value) ?? fallback));

/** Reads the knobs; throws CONFIG_INVALID naming the blueprint line and field. */
export function workerSettingsOf(blueprint: Blueprint, resultDir: string): WorkerSettings {
  const checked = frontMatterPartSchema.safeParse(blueprint.frontMatter);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const field = issue.path.map(String).join(".");
    const line = blueprint.lines[field] ?? blueprint.lines[String(issue.path[0])] ?? blueprint.lines.frontMatter ?? 1;
    throw new A3rError("CONFIG_INVALID", `front matter field ${field || "(root)"}: ${issue.message}`, {
      where: `${blueprint.file ?? "<blueprint>"}:${line}`,
      hint: "see worker/rules/worker-settings.ts for the worker's front-matter fields (durations like 5s, overrides as scalars)",
    });
  }
  const front = checked.data;
  const worker = front.worker ?? {};
  for (const pattern of worker.log_metric_patterns ?? []) {
    for (const source of [pattern.line, pattern.pair]) {
      try {
        new RegExp(source);
      } catch (error) {
        throw new A3rError("CONFIG_INVALID", `worker.log_metric_patterns "${pattern.name}": ${(error as Error).message}`, {
          where: `${blueprint.file ?? "<blueprint>"}:${blueprint.lines.worker ?? 1}`,
          hint: "give JavaScript regular expression sources; `line` captures (?<step>...), `pair` captures (?<key>...) and (?<value>...)",
        });
      }
    }
  }
  const heartbeatIntervalMs = ms(worker.heartbeat_interval, defaultWorkerSettings.heartbeatIntervalMs);
  const leaseTtlMs = ms(worker.lease_ttl, defaultWorkerSettings.leaseTtlMs);
  if (leaseTtlMs < 2 * heartbeatIntervalMs) {
    // A lease that can lapse between two heartbeats would let a second worker take a live run.
    throw new A3rError("CONFIG_INVALID", `worker.lease_ttl (${leaseTtlMs} ms) must be at least twice worker.heartbeat_interval (${heartbeatIntervalMs} ms)`, {
      where: `${blueprint.file ?? "<blueprint>"}:${blueprint.lines.worker ?? 1}`,
      hint: "raise lease_ttl or lower heartbeat_interval",
    });
  }
  const metricsFile =
    front.metrics_file === undefined
      ? resolve(resultDir, "logs", "run-metrics.jsonl")
      : isAbsolute(front.metrics_file)
        ? front.metrics_file
        : resolve(blueprint.codebase, front.metrics_file);
  return {
    pollIntervalMs: ms(worker.poll_interval, defaultWorkerSettings.pollIntervalMs),
    heartbeatIntervalMs,
    firstSignalTimeoutMs: ms(front.first_signal_timeout, defaultWorkerSettings.firstSignalTimeoutMs),
    stallTimeoutMs: ms(worker.stall_timeout, defaultWorkerSettings.stallTimeoutMs),
    gracePeriodMs: ms(worker.grace_period, defaultWorkerSettings.gracePeriodMs),
    leaseTtlMs,
    swarmReadyTimeoutMs: ms(worker.swarm_ready_timeout, defaultWorkerSettings.swarmReadyTimeoutMs),
    maxClientRestarts: worker.max_client_restarts ?? defaultWorkerSettings.maxClientRestarts,
    metricsFile,
    logMetricPatterns: [...(worker.log_metric_patterns ?? []), ...defaultLogMetricPatterns],
    env: Object.fromEntries(Object.entries(front.env ?? {}).map(([key, value]) => [key, String(value)])),
    overrides: { ...(front.overrides ?? {}) },
    requireTrainingSignal: worker.require_training_signal ?? true,
    logCapBytes: parseByteSize(worker.log_cap ?? defaultLogCap)!,
    logCap: String(worker.log_cap ?? defaultLogCap),
    playbook: withApiBackoff(worker.api_backoff?.map((value) => parseDuration(value)!)),
  };
}

function withApiBackoff(delaysMs: number[] | undefined): Record<FailureClass, PlaybookEntry> {
  if (!delaysMs) return defaultPlaybook;
  return {
    ...defaultPlaybook,
    external_api_rate_limit: { ...defaultPlaybook.external_api_rate_limit, delaysMs },
    external_api_auth: { ...defaultPlaybook.external_api_auth, delaysMs },
  };
}
