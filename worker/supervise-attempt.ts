import { AttemptWatch } from "./supervise/attempt-watch.ts";
import type { CheckPoll, CheckVerdict, SupervisionCheck } from "./supervise/supervision-check.ts";
import { cancellationCheck } from "./supervise/checks/check-cancellation.ts";
import { firstSignalCheck } from "./supervise/checks/check-first-signal.ts";
import { foreignWritesCheck } from "./supervise/checks/check-foreign-writes.ts";
import { heartbeatCheck } from "./supervise/checks/check-heartbeat.ts";
import { mainExitCheck } from "./supervise/checks/check-main-exit.ts";
import { nonFiniteLossCheck } from "./supervise/checks/check-non-finite-loss.ts";
import { progressLineCheck } from "./supervise/checks/check-progress-line.ts";
import { readMetricsCheck } from "./supervise/checks/check-read-metrics.ts";
import { stallCheck } from "./supervise/checks/check-stall.ts";
import { stopRequestCheck } from "./supervise/checks/check-stop-request.ts";
import { swarmProcessesCheck } from "./supervise/checks/check-swarm-processes.ts";
import { timeBudgetCheck } from "./supervise/checks/check-time-budget.ts";
import type { AttemptEnd, SuperviseOptions } from "./supervise/supervise-options.ts";

export type { AttemptEnd, SuperviseOptions } from "./supervise/supervise-options.ts";

/**
 * What is watched every poll, in this order; the first check that decides ends the poll.
 * A new failure mode is a new file (`check-<name>.ts`) and one line here. The order matters: the
 * files the worker owns are restored before anything is read, the metrics are read before
 * they are judged, a non-finite loss outranks a cancellation, a cancellation a stop request,
 * a stop request the budget, and the processes' exits come before the timeouts.
 */
export const pollChecks: readonly SupervisionCheck[] = [
  foreignWritesCheck,
  readMetricsCheck,
  heartbeatCheck,
  progressLineCheck,
  nonFiniteLossCheck,
  cancellationCheck,
  stopRequestCheck,
  timeBudgetCheck,
  mainExitCheck,
  swarmProcessesCheck,
  firstSignalCheck,
  stallCheck,
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Watches one attempt until it ends, continuously (every poll interval, no backoff): runs
 * the checks above, each poll, in order (metrics, heartbeats, the processes, a stop request
 * (`stop-request.json`), the time budget, the first-signal timeout and stalls). It never
 * decides recovery: it returns how the attempt ended, with the facts the classifier needs.
 * Swarm clients are the exception: a crashed client is restarted here, alone, because that
 * is not a new attempt of the run.
 *
 * Example (classic, NaN): steps 1..5 recorded → step 6 has loss=NaN → group stopped →
 * `{kind: "failed", facts: {nonFiniteMetric: {step: 6, key: "loss"}}}`.
 */
export async function superviseAttempt(options: SuperviseOptions): Promise<AttemptEnd> {
  const watch = new AttemptWatch(options);
  const polls = pollChecks.map((check) => check.start(watch)).filter((poll): poll is CheckPoll => poll !== undefined);
  for (;;) {
    const verdict = await pollOnce(polls);
    if (verdict === "poll-again") continue;
    if (verdict !== undefined) return watch.end(verdict);
    // A log with unread output is read on at once (pollBudget slices), not a poll interval later.
    if (!watch.readingBehind) await sleep(options.settings.pollIntervalMs);
  }
}

/** Runs the checks in order until one decides. */
async function pollOnce(polls: readonly CheckPoll[]): Promise<CheckVerdict> {
  for (const poll of polls) {
    const verdict = await poll();
    if (verdict !== undefined) return verdict;
  }
  return undefined;
}
