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
}

/** sbatch's options, one word each (the caller quotes them). */
export function sbatchArguments(request: JobRequest): string[] {
  const { host } = request;
  return [
    "--parsable",
    `--job-name=${jobNameOf(request.ref)}`,
    `--comment=a3r:${runKey(request.ref)}`,
    `--chdir=${request.runDir}`,
    // Appended: a requeued job's second start adds to the log instead of wiping the first.
    `--output=${request.runDir}/worker.log`,
    "--open-mode=append",
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
 * the stop. A requeued job runs it again: the worker re-attaches to its result directory
 * (resume from checkpoints, or nothing to do once finish.flag is there).
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
    `exec ${workerRunCommand(request.host.a3r, blueprint, resultDir, request.llmAllowance)}`,
    "",
  ].join("\n");
}
