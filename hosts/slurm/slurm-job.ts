import type { Blueprint } from "../../blueprints/index.ts";
import { parseDuration } from "../../core/duration.ts";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { runKey, type LlmAllowance, type RunRef } from "../port/launcher.ts";
import { shellQuote } from "../../core/shell-quote.ts";
import { workerRunCommand } from "../port/worker-command-line.ts";

/**
 * What one run asks of Slurm: the sbatch options and the batch script. Pure.
 *
 * The job name carries campaign and blueprint id (`a3r.<campaign>+<blueprint id>`), so a
 * launcher that lost its own record (a leader killed between sbatch and writing
 * launch.json) finds the job with `squeue --name` and never submits it twice.
 */
export function jobNameOf(ref: RunRef): string {
  return `a3r.${runKey(ref)}`;
}

/** The worker's default grace (TERM, then KILL), as worker/rules/worker-settings.ts has it. */
const defaultWorkerGraceMs = 30_000;
/** From TERM to the worker's recorded end with that grace: twice the grace and its writes (port/cancel-wait.ts). */
const defaultWorkerStopMs = 2 * defaultWorkerGraceMs + 5_000;
/** Room for the worker's prepare step and its finish (result.md, curves) around the budget. */
const preparationSlackMs = 5 * 60_000;

/**
 * Minutes for `--time`: the host's `time_limit` when it sets one, else the blueprint's time
 * budget plus the worker's grace and a few minutes to prepare and finish, so the worker's
 * own budget (which records `timed_out`) fires before Slurm's (which kills it). Undefined
 * (the partition's default) when neither says.
 */
export function timeLimitMinutes(
  host: Pick<SlurmHostConfig, "time_limit">,
  blueprint: Pick<Blueprint, "timeBudgetMs" | "frontMatter"> | undefined,
): number | undefined {
  if (host.time_limit !== undefined) return Math.max(1, Math.ceil(parseDuration(host.time_limit)! / 60_000));
  const budget = blueprint?.timeBudgetMs;
  if (!(typeof budget === "number" && budget > 0)) return undefined;
  const worker = (blueprint!.frontMatter.worker ?? {}) as Record<string, unknown>;
  const grace = typeof worker.grace_period === "string" || typeof worker.grace_period === "number" ? parseDuration(worker.grace_period) : undefined;
  return Math.ceil((budget + (grace ?? defaultWorkerGraceMs) + preparationSlackMs) / 60_000);
}

export interface JobRequest {
  ref: RunRef;
  host: SlurmHostConfig;
  /** The run folder on the cluster: blueprint.md, job.sh, worker.log, result/. */
  runDir: string;
  gpus: number;
  timeLimitMinutes: number | undefined;
  llmAllowance?: LlmAllowance | undefined;
  /** How long the worker needs from TERM to its recorded end (port/cancel-wait.ts); default: the worker's default grace. */
  stopMs?: number;
}

/**
 * Slurm sends `--signal` up to a minute early, so a limit under this gets none (it would
 * come at once); above it the worker is told `stopMs` before the limit.
 */
const signalFloorMinutes = 10;

/**
 * `--signal=B:TERM@<s>`: the worker (the batch shell, exec'd) gets TERM that long before
 * the time limit, time to stop the training (which checkpoints on TERM) and record the end
 * before Slurm's KILL, instead of the KillWait (often 30 s) after the limit. Clusters with
 * `PreemptParameters=send_user_signal` send it at a preemption too. Undefined for short or
 * unknown limits.
 */
export function signalArgument(minutes: number | undefined, stopMs: number): string | undefined {
  if (minutes === undefined || minutes < signalFloorMinutes) return undefined;
  const seconds = Math.min(Math.ceil(stopMs / 1000), Math.floor((minutes * 60) / 4));
  return `--signal=B:TERM@${Math.max(seconds, 60)}`;
}

/** sbatch's options, one word each (the caller quotes them). */
export function sbatchArguments(request: JobRequest): string[] {
  const { host } = request;
  const signal = signalArgument(request.timeLimitMinutes, request.stopMs ?? defaultWorkerStopMs);
  return [
    "--parsable",
    `--job-name=${jobNameOf(request.ref)}`,
    `--comment=a3r:${runKey(request.ref)}`,
    `--chdir=${request.runDir}`,
    // Appended: a requeued job's second start adds to the log instead of wiping the first.
    `--output=${request.runDir}/worker.log`,
    "--open-mode=append",
    // A preempted or requeued job comes back as the same run (batchScript reopens it), so
    // it may be requeued whatever the cluster's JobRequeue default is.
    "--requeue",
    ...(signal ? [signal] : []),
    ...resourceArguments(host, request.gpus, request.timeLimitMinutes),
  ];
}

/** What a run asks for (also what `a3r hosts check` tries with `sbatch --test-only`). */
export function resourceArguments(host: SlurmHostConfig, gpus: number, minutes: number | undefined): string[] {
  return [
    "--nodes=1",
    "--ntasks=1",
    ...(host.partition ? [`--partition=${host.partition}`] : []),
    ...(host.account ? [`--account=${host.account}`] : []),
    ...(host.qos ? [`--qos=${host.qos}`] : []),
    ...(gpus > 0 ? [`--gres=${host.gres}:${gpus}`] : []),
    ...(host.cpus_per_run ? [`--cpus-per-task=${host.cpus_per_run}`] : []),
    ...(host.memory_per_run ? [`--mem=${host.memory_per_run}`] : []),
    ...(minutes ? [`--time=${minutes}`] : []),
    ...host.sbatch_options,
  ];
}

/**
 * The batch script: `a3r worker run` for the blueprint, exec'd so the worker is the job's
 * main process and gets Slurm's TERM itself (scancel, time limit, preemption) and records
 * the stop.
 *
 * A requeued job (`scontrol requeue`, a preemption with PreemptMode=REQUEUE, a node
 * failure with --requeue) runs it again with SLURM_RESTART_COUNT > 0, in the same run
 * folder. Every start appends a line to `result/slurm-starts.jsonl` (job, restart count,
 * node, time): the result's record of its starts. The requeue's TERM made the worker of the
 * earlier start record the run `cancelled` (status.json, then finish.flag; a worker that
 * Slurm's KILL cut off between the two left status.json alone); the job was not cancelled
 * (a cancel is never requeued, and a3r's own cancel leaves `cancel-requested` first), so
 * the script reopens it: the earlier end (finish.flag, result.md, status.json) goes to
 * `result/requeued/<restart>/`, status.json's top-level state becomes `recovering` and a
 * `run.requeued` event is appended; the worker then starts the next attempt with
 * A3R_RESUME=1, from the run's last checkpoint. A run its worker had already finished
 * otherwise (succeeded, stopped early) is left finished. A killed worker (node failure)
 * left the run `running`: the worker re-attaches or judges how it ended, as everywhere.
 * The start record is appended after the reopening: a poll reads it before the run's
 * files (slurm-launcher.ts), so it never pairs this start's record with the end it reopens.
 */
export function batchScript(request: JobRequest): string {
  const blueprint = `${request.runDir}/blueprint.md`;
  const resultDir = `${request.runDir}/result`;
  return [
    "#!/bin/sh",
    `# a3r run ${request.ref.campaign}/${request.ref.blueprintId}, submitted by a3r's slurm launcher`,
    `cd ${shellQuote(request.runDir)} || exit 1`,
    `A3R_HOST=${shellQuote(request.host.name)}; export A3R_HOST`,
    // No GPUs asked: none visible, whatever the submitting shell had. Slurm sets it for --gres.
    ...(request.gpus > 0 ? [] : ["CUDA_VISIBLE_DEVICES=; export CUDA_VISIBLE_DEVICES"]),
    ...requeueReopenLines,
    `exec ${workerRunCommand(request.host.a3r, blueprint, resultDir, request.llmAllowance)}`,
    "",
  ].join("\n");
}

/** The start record and the reopening of a run a requeue's TERM ended (see batchScript). POSIX sh and awk. */
const requeueReopenLines = [
  "mkdir -p result",
  'restart=${SLURM_RESTART_COUNT:-0}; case "$restart" in ""|*[!0-9]*) restart=0;; esac',
  "now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)",
  // Ended cancelled by the requeue's TERM: finish.flag says so, or status.json alone where
  // Slurm's KILL (KillWait after its TERM) cut the worker off between its last status and finish.flag.
  `if [ "$restart" -gt 0 ] && [ ! -e cancel-requested ] && { [ "$(cat result/finish.flag 2>/dev/null)" = cancelled ] || { [ ! -e result/finish.flag ] && grep -Eq '^  "state": "cancelled",?$' result/status.json 2>/dev/null; }; }; then`,
  '  aside="result/requeued/$restart"; mkdir -p "$aside"',
  // Only the top-level key (two spaces: status.json is written with JSON.stringify(_, null, 2)).
  `  why="requeued by Slurm (job \${SLURM_JOB_ID:-}): start $((restart + 1)) resumes the run"`,
  `  awk -v to='"recovering"' -v why="$why" '!state && /^  "state": "cancelled",?$/ { sub(/"cancelled"/, to); state = 1 } !reason && /^  "reason": / { comma = /,$/ ? "," : ""; $0 = "  \\"reason\\": \\"" why "\\"" comma; reason = 1 } { print }' result/status.json > result/.status-reopen.json`,
  `  if grep -q '^  "state": "recovering",*$' result/.status-reopen.json; then`,
  '    cp result/status.json "$aside/status.json" && { [ ! -e result/finish.flag ] || mv result/finish.flag "$aside/finish.flag"; } && { mv result/result.md "$aside/result.md" 2>/dev/null; true; } && mv result/.status-reopen.json result/status.json',
  `    printf '{"time":"%s","kind":"run.requeued","job":"%s","start":%s,"previous":"cancelled"}\\n' "$now" "\${SLURM_JOB_ID:-}" "$((restart + 1))" >> result/events.jsonl`,
  // Said in worker.log: a status.json not written as the worker writes it is left alone, and the run stays cancelled.
  "  else rm -f result/.status-reopen.json",
  `    echo "a3r job.sh: start $((restart + 1)) of requeued job \${SLURM_JOB_ID:-} could not reopen the run: result/status.json has no top-level \\"state\\": \\"cancelled\\" line as the worker writes it; the run stays cancelled" >&2`,
  "  fi",
  "fi",
  `printf '{"at":"%s","job":"%s","restart":%s,"node":"%s"}\\n' "$now" "\${SLURM_JOB_ID:-}" "$restart" "$(hostname)" >> result/slurm-starts.jsonl`,
];
