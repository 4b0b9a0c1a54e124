import type { RunProgress, RunRef } from "../port/launcher.ts";
import { describeProgress, launchGraceMs, parseLaunchMarker, type RawRunFiles } from "../port/run-progress.ts";

/**
 * Slurm's view of a job, as `squeue` or `sacct` prints it, and how it joins the run's own
 * files into the progress the port reports. Pure.
 *
 * The result directory is the truth where it has one (finish.flag, status.json: the
 * worker writes them); Slurm says what the files cannot: a job still waiting (and why), one
 * requeued, one Slurm ended before its worker could finish (time limit, preemption, node
 * failure, scancel with KILL), one Slurm no longer knows.
 */
export interface SlurmJobView {
  jobId: string;
  name: string;
  /** The state's first word, upper case: PENDING, RUNNING, TIMEOUT, CANCELLED, ... */
  state: string;
  /** squeue's %r (Resources, Priority, BeginTime, ...) or sacct's Reason; "" when none. */
  reason: string;
  source: "squeue" | "sacct";
  /** How often Slurm requeued and restarted it (squeue's RestartCnt), where known. */
  restarts?: number;
}

/** A line of the run's `result/slurm-starts.jsonl`: one start of its batch script (slurm-job.ts). */
export interface SlurmStart {
  job: string;
  /** SLURM_RESTART_COUNT of that start: 0 for the first. */
  restart: number;
}

export function parseSlurmStart(line: string | undefined): SlurmStart | undefined {
  if (!line?.trim()) return undefined;
  try {
    const value = JSON.parse(line.trim()) as { job?: unknown; restart?: unknown };
    return typeof value.restart === "number" ? { job: String(value.job ?? ""), restart: value.restart } : undefined;
  } catch {
    return undefined;
  }
}

/** `squeue -O JobID,RestartCnt` (space-padded columns): restart count by job id. */
export function parseRestarts(text: string): Map<string, number> {
  const restarts = new Map<string, number>();
  for (const line of text.split("\n")) {
    const [jobId, count] = line.trim().split(/\s+/);
    if (jobId && /^\d+$/.test(jobId) && count && /^\d+$/.test(count)) restarts.set(jobId, Number(count));
  }
  return restarts;
}

/** Job states in which Slurm will still run (or runs) the job's batch script. */
const livingStates = new Set([
  "RUNNING",
  "CONFIGURING",
  "COMPLETING",
  "PENDING",
  "REQUEUED",
  "REQUEUE_HOLD",
  "REQUEUE_FED",
  "SUSPENDED",
  "RESV_DEL_HOLD",
  "SPECIAL_EXIT",
]);

/**
 * A run whose worker recorded `cancelled` because Slurm requeued its job (the TERM of a
 * requeue or preemption): the job is still alive and Slurm restarted it more often than
 * the run has recorded starts (`slurm-starts.jsonl`). Its next start reopens and resumes
 * it (slurm-job.ts batchScript), so it is not finished. Without a restart count (an old
 * squeue), a job waiting again after the run's end says the same.
 */
function requeuedSinceEnd(base: RunProgress, job: SlurmJobView | undefined, lastStart: SlurmStart | undefined): boolean {
  if (!job || base.state !== "cancelled" || !livingStates.has(job.state)) return false;
  if (job.restarts !== undefined) return job.restarts > (lastStart?.restart ?? 0);
  return isPendingState(job.state);
}

/** squeue's output format for `parseSqueue`: job id, name, state, reason. */
export const squeueFormat = "%A|%j|%T|%r";
/** sacct's fields for `parseSacct` (with -P: '|' between fields). */
export const sacctFields = "JobID,JobName,State,Reason";

const pendingStates = new Set(["PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"]);
const terminalStates = new Set(["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"]);
/** Endings Slurm imposed (not the worker's own exit): worth saying beside the worker's reason. */
const imposedEndings: Record<string, string> = {
  TIMEOUT: "over its Slurm time limit",
  PREEMPTED: "preempted",
  NODE_FAIL: "its node failed",
  BOOT_FAIL: "its node failed to boot",
  CANCELLED: "cancelled in Slurm",
  DEADLINE: "past its Slurm deadline",
  OUT_OF_MEMORY: "out of memory",
  REVOKED: "revoked by a federated cluster",
};

export function isPendingState(state: string): boolean {
  return pendingStates.has(state);
}

export function isTerminalSlurmState(state: string): boolean {
  return terminalStates.has(state);
}

function parseLines(text: string, source: SlurmJobView["source"]): SlurmJobView[] {
  const jobs: SlurmJobView[] = [];
  for (const line of text.split("\n")) {
    const [jobId, name, state, ...reason] = line.trim().split("|");
    // Job steps (123.batch) and array tasks are not runs; a header or a warning is not a job.
    if (!jobId || !/^\d+$/.test(jobId) || !name || !state) continue;
    jobs.push({ jobId, name, state: state.split(/\s+/)[0]!.replace(/\+$/, "").toUpperCase(), reason: reason.join("|").trim(), source });
  }
  return jobs;
}

export function parseSqueue(text: string): SlurmJobView[] {
  return parseLines(text, "squeue");
}

export function parseSacct(text: string): SlurmJobView[] {
  return parseLines(text, "sacct").map((job) => ({ ...job, reason: job.reason === "None" ? "" : job.reason }));
}

/**
 * The job of a run: the one its launch.json names when Slurm knows it, else the newest job
 * of its name. squeue answers first; sacct only for jobs squeue has forgotten (it lags
 * behind squeue for new jobs, and squeue forgets finished ones after MinJobAge).
 */
export function jobOfRun(jobName: string, recordedJobId: string | undefined, squeue: SlurmJobView[], sacct: SlurmJobView[]): SlurmJobView | undefined {
  for (const source of [squeue, sacct]) {
    const named = source.filter((job) => job.name === jobName);
    const recorded = recordedJobId === undefined ? undefined : named.find((job) => job.jobId === recordedJobId);
    if (recorded) return recorded;
    if (recordedJobId === undefined && named.length > 0) return named.reduce((newest, job) => (Number(job.jobId) > Number(newest.jobId) ? job : newest));
  }
  return undefined;
}

export function parseJobId(launchText: string | undefined): string | undefined {
  if (!launchText) return undefined;
  try {
    const jobId = (JSON.parse(launchText) as { jobId?: unknown }).jobId;
    return typeof jobId === "string" && /^\d+$/.test(jobId) ? jobId : undefined;
  } catch {
    return undefined;
  }
}

/** The run's progress from its files and its Slurm job (undefined: Slurm knows no such job). */
export function slurmProgress(
  ref: RunRef,
  host: string,
  files: RawRunFiles,
  job: SlurmJobView | undefined,
  now: Date = new Date(),
  lastStart?: SlurmStart,
): RunProgress {
  const base = describeProgress(ref, host, { ...files, alive: undefined }, now);
  const jobId = job?.jobId ?? parseJobId(files.launch);
  if (base.finished && requeuedSinceEnd(base, job, lastStart)) {
    const start = (lastStart?.restart ?? 0) + 2;
    return {
      ...base,
      finished: false,
      // Running again (its batch script about to reopen the run), or still pending or being killed.
      state: job!.state === "RUNNING" || job!.state === "CONFIGURING" ? "launching" : "queued",
      reason: `requeued by Slurm as job ${job!.jobId} (${job!.state}): the requeue's TERM ended start ${start - 1} as cancelled, start ${start} resumes the run`,
    };
  }
  if (base.finished) {
    // While Slurm still kills a job over its limit, squeue says COMPLETING with reason TimeLimit.
    const ending = job?.state === "COMPLETING" && job.reason === "TimeLimit" ? "TIMEOUT" : job?.state;
    const imposed = ending ? imposedEndings[ending] : undefined;
    if (imposed) return { ...base, reason: `${base.reason ?? base.state}; Slurm: job ${job!.jobId} ${ending} (${imposed})` };
    // Requeued after its worker finished the run otherwise (succeeded, stopped early): the next start finds it finished.
    if (job && isPendingState(job.state))
      return { ...base, reason: `${base.reason ?? base.state}; Slurm requeued job ${job.jobId} (its next start finds the run finished)` };
    return base;
  }
  if (job && isPendingState(job.state)) {
    const why = `${job.state}${job.reason && job.reason !== "None" ? ` (${job.reason})` : ""}`;
    // A status from an earlier start: the job ran, was requeued, and waits to run again.
    const requeued = files.status !== undefined;
    return {
      ...base,
      state: "queued",
      reason: requeued ? `requeued by Slurm as job ${job.jobId}, waiting: ${why}` : `waiting in Slurm as job ${job.jobId}: ${why}`,
    };
  }
  if (job && isTerminalSlurmState(job.state)) {
    const imposed = imposedEndings[job.state] ?? (job.state === "COMPLETED" ? "exited" : "failed");
    return {
      ...base,
      state: "lost",
      reason: `Slurm ended job ${job.jobId} as ${job.state}${job.reason && job.reason !== "None" ? ` (${job.reason})` : ""}, ${imposed}, before its worker finished`,
    };
  }
  if (job) {
    if (job.state === "SUSPENDED" || job.state === "STOPPED") return { ...base, reason: `suspended by Slurm (job ${job.jobId})` };
    // Found by its name alone (a launcher killed between sbatch and launch.json), or its
    // worker not started yet: a run being launched, never one to submit again.
    if (base.state === "unknown")
      return { ...base, state: "launching", reason: files.launch === undefined ? `submitted as Slurm job ${job.jobId} (found by its name)` : null };
    return base;
  }
  // Slurm knows no job for the run.
  if (files.launch === undefined) return base;
  const marker = parseLaunchMarker(files.launch);
  const launchedAt = marker ? Date.parse(marker.launchedAt) : Number.NaN;
  if (Number.isFinite(launchedAt) && now.getTime() - launchedAt < launchGraceMs) return { ...base, state: base.state === "unknown" ? "launching" : base.state };
  return {
    ...base,
    state: "lost",
    reason: `Slurm no longer knows job ${jobId ?? "(none recorded)"} and its worker never finished (squeue forgets jobs after MinJobAge; sacct had no record)`,
  };
}
