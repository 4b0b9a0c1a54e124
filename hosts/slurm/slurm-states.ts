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
export function slurmProgress(ref: RunRef, host: string, files: RawRunFiles, job: SlurmJobView | undefined, now: Date = new Date()): RunProgress {
  const base = describeProgress(ref, host, { ...files, alive: undefined }, now);
  const jobId = job?.jobId ?? parseJobId(files.launch);
  if (base.finished) {
    // While Slurm still kills a job over its limit, squeue says COMPLETING with reason TimeLimit.
    const ending = job?.state === "COMPLETING" && job.reason === "TimeLimit" ? "TIMEOUT" : job?.state;
    const imposed = ending ? imposedEndings[ending] : undefined;
    if (imposed) return { ...base, reason: `${base.reason ?? base.state}; Slurm: job ${job!.jobId} ${ending} (${imposed})` };
    // Requeued after its worker recorded the end (a preemption's TERM): the next start finds it finished.
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
