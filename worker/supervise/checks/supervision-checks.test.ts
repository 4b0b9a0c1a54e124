import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ResultDirWriter } from "../../../campaign/index.ts";
import { defaultLogMetricPatterns } from "../../rules/log-metrics.ts";
import type { ProgressReporter } from "../progress-reporter.ts";
import { defaultWorkerSettings, type WorkerSettings } from "../../rules/worker-settings.ts";
import { AttemptWatch } from "../attempt-watch.ts";
import { pollChecks } from "../../supervise-attempt.ts";
import type { SuperviseOptions } from "../supervise-options.ts";
import { firstSignalCheck } from "./check-first-signal.ts";
import { mainExitCheck } from "./check-main-exit.ts";
import { nonFiniteLossCheck } from "./check-non-finite-loss.ts";
import { readMetricsCheck } from "./check-read-metrics.ts";
import { stallCheck } from "./check-stall.ts";
import { stopRequestCheck } from "./check-stop-request.ts";
import { swarmProcessesCheck } from "./check-swarm-processes.ts";

/**
 * The checks one at a time, on a real AttemptWatch over a temp folder, a recording writer
 * and a settable clock; the process group is one that does not exist (stopping it is a no-op).
 * The whole loop with real processes is covered by the worker integration tests (worker/*.int.test.ts).
 */
const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function setUp(overrides: Partial<SuperviseOptions> = {}) {
  const dir = await mkdtemp(join(tmpdir(), "a3r-checks-"));
  folders.push(dir);
  const events: Array<{ kind: string; fields: Record<string, unknown> }> = [];
  const metrics: Array<Record<string, unknown>> = [];
  const messages: string[] = [];
  const writer = {
    appendEvent: async (kind: string, fields: Record<string, unknown>) => void events.push({ kind, fields }),
    appendMetrics: async (record: Record<string, unknown>) => void metrics.push(record),
    heartbeat: async () => undefined,
    guardOwnedFiles: async () => [],
  } as unknown as ResultDirWriter;
  const settings = {
    ...defaultWorkerSettings,
    gracePeriodMs: 10,
    metricsFile: join(dir, "run-metrics.jsonl"),
    logMetricPatterns: defaultLogMetricPatterns,
  } as unknown as WorkerSettings;
  const progress = { event: (message: string) => void messages.push(message), progress: () => undefined, done: () => undefined } as ProgressReporter;
  const log = join(dir, "attempt-1.log");
  const main = { role: "main", pid: 999_999_999, pgid: 999_999_999, startTime: null, command: "train", logFile: log, exitFile: join(dir, "attempt-1.exit") };
  const clock = { now: 1_000_000 };
  const options: SuperviseOptions = {
    writer,
    attempt: 1,
    mode: "classic",
    processes: [main],
    settings,
    runStartedAtMs: clock.now,
    attemptStartedAtMs: clock.now,
    budgetMs: 3_600_000,
    oomKillsAtStart: null,
    lastStep: null,
    progress,
    resultDir: dir,
    saveProcesses: async () => undefined,
    now: () => clock.now,
    ...overrides,
  };
  return { dir, log, events, metrics, messages, clock, watch: new AttemptWatch(options) };
}

describe("supervision checks", () => {
  it("runs in the order the supervisor has always watched", () => {
    expect(pollChecks.map((check) => check.name)).toEqual([
      "foreign writes",
      "read metrics",
      "heartbeat",
      "progress line",
      "non-finite loss",
      "cancellation",
      "stop request",
      "time budget",
      "main process exit",
      "swarm processes",
      "first signal",
      "stall",
    ]);
  });

  it("starts the classic or the swarm process check, never both", async () => {
    const { watch } = await setUp();
    expect(mainExitCheck.start(watch)).toBeTypeOf("function");
    expect(swarmProcessesCheck.start(watch)).toBeUndefined();
  });

  it("a stop request: an invalid one is reported once, a valid one records its evidence before the stop", async () => {
    const { dir, events, watch } = await setUp();
    const poll = stopRequestCheck.start(watch)!;
    await writeFile(join(dir, "stop-request.json"), '{"state": "done"}');
    expect(await poll()).toBeUndefined();
    expect(await poll()).toBeUndefined();
    expect(events.filter((event) => event.kind === "run.stop-request-invalid")).toHaveLength(1);
    await writeFile(join(dir, "stop-request.json"), JSON.stringify({ state: "stopped_early", reason: "hopeless at rung 1", evidence: { rung: 1 } }));
    expect(await poll()).toEqual({ kind: "stopped_early", detail: "hopeless at rung 1", evidence: { rung: 1 }, lastStep: null });
    expect(events.at(-1)).toMatchObject({ kind: "run.stop-requested", fields: { reason: "hopeless at rung 1", evidence: { rung: 1 } } });
  });

  it("a non-finite loss fails the attempt at its step; another non-finite metric is a warning, once", async () => {
    const { log, events, metrics, messages, watch } = await setUp();
    const read = readMetricsCheck.start(watch)!;
    const nonFinite = nonFiniteLossCheck.start(watch)!;
    await appendFile(log, "step:1 - loss:0.5 - grad_norm:inf\nstep:2 - loss:0.4 - grad_norm:inf\n");
    await read();
    expect(await nonFinite()).toBeUndefined();
    expect(events.filter((event) => event.kind === "metric.non-finite")).toHaveLength(1);
    expect(messages).toEqual(["warning: metric grad_norm was not finite at step 1 (not a loss metric, training goes on)"]);
    await appendFile(log, "step:3 - loss:nan\n");
    await read();
    const ended = await nonFinite();
    expect(ended).toMatchObject({
      kind: "failed",
      detail: "metric loss was not finite at step 3",
      facts: { nonFiniteMetric: { step: 3, key: "loss" } },
      lastStep: 3,
    });
    expect(metrics.map((record) => record.step)).toEqual([1, 2, 3]);
  });

  it("first signal, then stall: each fires at its limit and says what was seen", async () => {
    const { log, clock, watch } = await setUp();
    const read = readMetricsCheck.start(watch)!;
    const firstSignal = firstSignalCheck.start(watch)!;
    const stall = stallCheck.start(watch)!;
    clock.now += defaultWorkerSettings.firstSignalTimeoutMs - 1;
    expect(await firstSignal()).toBeUndefined();
    await appendFile(log, "step:1 - loss:0.5\n");
    await read();
    clock.now += 1;
    expect(await firstSignal()).toBeUndefined();
    // The step was read 1 ms ago: the stall clock runs from then.
    clock.now += defaultWorkerSettings.stallTimeoutMs - 2;
    expect(await stall()).toBeUndefined();
    clock.now += 1;
    const ended = await stall();
    expect(ended).toMatchObject({ kind: "failed", facts: { stalled: true }, lastStep: 1 });
    expect(ended !== undefined && ended !== "poll-again" && ended.detail).toBe(
      "no new step for 30m after step 1 (stall): rule worker.stall_timeout = 30m fired; step 1 was the last, recorded 30m ago; the main log has 18 bytes, last written 30m ago",
    );
  });

  it("no signal at all fails at the first-signal timeout", async () => {
    const { clock, watch } = await setUp();
    clock.now += defaultWorkerSettings.firstSignalTimeoutMs;
    const ended = await firstSignalCheck.start(watch)!();
    expect(ended).toMatchObject({ kind: "failed", lastStep: null, facts: { stalled: true } });
    expect(ended !== undefined && ended !== "poll-again" && ended.detail).toBe(
      "no training signal within the first-signal timeout (20m): rule first_signal_timeout = 20m fired; 20m after launch no step or metric was seen; the main log is empty",
    );
  });
});
