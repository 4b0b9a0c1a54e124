import type { ResultDirWriter } from "../../campaign/index.ts";
import type { FailureFacts } from "../rules/failure-classifier.ts";
import type { LaunchedProcessRecord } from "../launch/launched-process.ts";
import type { SwarmHooks } from "../launch/attempt-launch.ts";
import type { ProgressReporter } from "./progress-reporter.ts";
import type { WorkerSettings } from "../rules/worker-settings.ts";

/**
 * What the supervision of one attempt is given (`SuperviseOptions`) and what it hands back
 * (`AttemptEnd`); shared by supervise-attempt.ts, attempt-watch.ts and the checks (`check-*.ts`).
 */

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
  /** Where this attempt's lines start in $A3R_METRICS_FILE (the lines before are earlier attempts'); default 0. */
  metricsFileOffset?: number;
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
  /** `stopped`: what stopping each process group took (stopRecord's outcome), when the budget stopped them. */
  | { kind: "timed_out"; detail: string; lastStep: number | null; stopped?: Array<{ role: string; pid: number; outcome: string }> }
  | { kind: "cancelled"; detail: string; lastStep: number | null }
  /** A stop request (`stop-request.json`, campaign/stop-request.ts) ended it; `evidence` is the requester's. */
  | { kind: "stopped_early"; detail: string; evidence: Record<string, unknown>; lastStep: number | null };
