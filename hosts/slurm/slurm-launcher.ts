import { blueprintGraceMs, cancelWaitMs } from "../port/cancel-wait.ts";
import { randomBytes } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { readBlueprintFile } from "../../blueprints/index.ts";
import { assertCampaignId, assertSafeBlueprintId, type StopRequest } from "../../campaign/index.ts";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { parseDuration } from "../../core/duration.ts";
import { A3rError } from "../../core/errors.ts";
import { redactSecrets } from "../../core/redact.ts";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { liveFiles, type FetchOutcome, type LaunchOutcome, type LaunchRequest, type Launcher, type RunProgress, type RunRef } from "../port/launcher.ts";
import { listMarkersScript, refsOfMarkerListing, type LaunchMarker, type RawRunFiles } from "../port/run-progress.ts";
import { shellQuote } from "../../core/shell-quote.ts";
import { stopRequestAnswer, stopRequestScript } from "../port/stop-request-script.ts";
import type { ClusterShell } from "./cluster-shell.ts";
import { batchScript, jobNameOf, sbatchArguments, timeLimitMinutes } from "./slurm-job.ts";
import { parseSinfo, type SlurmCapacity } from "./sinfo.ts";
import {
  jobOfRun,
  parseJobId,
  parseRestarts,
  parseSacct,
  parseSlurmStart,
  parseSqueue,
  sacctFields,
  slurmProgress,
  squeueFormat,
  type SlurmJobView,
  type SlurmStart,
} from "./slurm-states.ts";

/**
 * Runs blueprints through a cluster's own scheduler: each run is one `sbatch` of a batch
 * script that execs `a3r worker run`; Slurm owns placement, queuing, GPUs (Gres), time
 * limits and preemption, and the worker inside the allocation supervises as everywhere.
 *
 * Layout on the cluster (a shared or scratch filesystem the compute nodes see):
 * `<workdir>/<campaign>/<blueprint id>/` holds blueprint.md, job.sh, launch.json (with the
 * Slurm job id), worker.log (the job's output, appended across requeues) and `result/`.
 *
 * Idempotency: a launch runs under flock(1) on the run folder's `.submit.lock`, and submits
 * only when there is no launch.json, no job of the run's name in squeue or sacct, and no
 * result directory; a leader killed between sbatch and launch.json finds its job by name.
 *
 * One poll cycle is one command per host: squeue and sacct for every followed run at once,
 * then the runs' files, then squeue's restart counts (the order is the requeue's: lookUp). Cancel is `scancel --signal=TERM --full` (the worker records the
 * stop), then a plain scancel after the grace.
 *
 * Left out: job arrays, heterogeneous jobs, multi-node runs (one run = one node), and
 * moving result directories off the cluster's filesystem other than by `fetch`.
 */
export interface SlurmLauncherOptions {
  host: SlurmHostConfig;
  shell: ClusterShell;
  commandTimeoutMs?: number;
}

/** Drops the job ids a set-aside run left in `set-aside-jobs` (run in the run folder). */
const freshJobs = "fresh() { if [ -s set-aside-jobs ]; then grep -vxF -f set-aside-jobs; else cat; fi; }";

/** Jobs of a run kept active by Slurm (the worker may still write): what cancel waits for. */
const activeStates =
  "PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|SIGNALING|STAGE_OUT|RESIZING|STOPPED|RESV_DEL_HOLD|SPECIAL_EXIT";

export class SlurmLauncher implements Launcher {
  readonly kind = "slurm" as const;
  readonly host: string;
  private home: string | undefined;

  constructor(private readonly options: SlurmLauncherOptions) {
    this.host = options.host.name;
  }

  get shell(): ClusterShell {
    return this.options.shell;
  }

  /** Set before every Slurm command: the cluster's config when hosts.yaml names one. */
  private get prelude(): string {
    const conf = this.options.host.slurm_conf;
    return conf ? `SLURM_CONF=${shellQuote(conf)}; export SLURM_CONF; ` : "";
  }

  private async exec(script: string, idempotent: boolean, timeoutMs?: number) {
    return this.options.shell.exec(`${this.prelude}${script}`, { idempotent, timeoutMs: timeoutMs ?? this.options.commandTimeoutMs ?? 30_000 });
  }

  private async workdir(): Promise<string> {
    const { workdir } = this.options.host;
    if (!workdir.startsWith("~/")) return workdir;
    this.home ??= (await this.exec('printf %s "$HOME"', true)).stdout.trim();
    return `${this.home}/${workdir.slice(2)}`;
  }

  async runDir(ref: RunRef): Promise<string> {
    assertCampaignId(ref.campaign);
    assertSafeBlueprintId(ref.blueprintId);
    return `${await this.workdir()}/${ref.campaign}/${ref.blueprintId}`;
  }

  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const ref = { campaign: request.campaign, blueprintId: request.blueprintId };
    const runDir = await this.runDir(ref);
    const q = shellQuote(runDir);
    const blueprint = await readBlueprintFile(request.blueprintFile).catch(() => undefined);
    const gpus = request.gpuIndices.length > 0 ? request.gpuIndices.length : (this.options.host.gpus_per_run ?? 0);
    const job = {
      ref,
      host: this.options.host,
      runDir,
      gpus,
      timeLimitMinutes: timeLimitMinutes(this.options.host, blueprint),
      llmAllowance: request.llmAllowance,
      stopMs: cancelWaitMs(blueprintGraceMs(await readFile(request.blueprintFile, "utf8").catch(() => undefined))),
    };
    const made = await this.exec(`mkdir -p ${q}`, true);
    if (made.code !== 0) throw remoteFailure(this.host, this.shell.where, "could not create the run folder", made.stderr);
    // Uploaded under private names first; only the launch that submits moves them in place.
    const token = randomBytes(6).toString("hex");
    await this.shell.writeFile(`${runDir}/.blueprint-${token}.md`, await readFile(request.blueprintFile));
    await this.shell.writeFile(`${runDir}/.job-${token}.sh`, batchScript(job));
    const marker: Omit<LaunchMarker, "pgid"> & { pgid: null } = {
      campaign: ref.campaign,
      blueprintId: ref.blueprintId,
      host: this.host,
      resultDir: `${runDir}/result`,
      gpuIndices: request.gpuIndices,
      pgid: null,
      launchedAt: new Date().toISOString(),
    };
    const markerTemplate = JSON.stringify({ ...marker, jobId: "JOBID" });
    const name = shellQuote(jobNameOf(ref));
    const sbatch = ["sbatch", ...sbatchArguments(job).map(shellQuote), "job.sh"].join(" ");
    const script = [
      `cd ${q} || exit 3`,
      "exec 9>.submit.lock",
      `if command -v flock >/dev/null 2>&1; then flock -w 30 9 || { echo "another launch of this run holds .submit.lock" >&2; exit 4; }; fi`,
      `cleanup() { rm -f .blueprint-${token}.md .job-${token}.sh; }`,
      "if [ -s launch.json ]; then cleanup; echo @@exists; exit 0; fi",
      freshJobs,
      `found=$(squeue -h -t all --me --name=${name} -o %A 2>/dev/null | fresh | sort -n | tail -n 1)`,
      `[ -n "$found" ] || found=$(sacct -n -X -P --name=${name} -S now-60days -o JobID 2>/dev/null | grep -E '^[0-9]+$' | fresh | sort -n | tail -n 1)`,
      'if [ -n "$found" ]; then job=$found; how=adopted',
      // A worker ran here but its record is gone: never a second run into its result directory.
      "elif [ -e result/status.json ]; then cleanup; echo @@exists; exit 0",
      "else",
      `  mv .blueprint-${token}.md blueprint.md && mv .job-${token}.sh job.sh && chmod +x job.sh || exit 3`,
      `  out=$(${sbatch} 2>sbatch.err) || { cat sbatch.err >&2; exit 5; }`,
      `  job=$(printf '%s\\n' "$out" | tail -n 1); job=\${job%%;*}; how=new`,
      "fi",
      "cleanup",
      `printf '%s\\n' ${shellQuote(markerTemplate)} | sed "s/JOBID/$job/" > launch.json.tmp && mv launch.json.tmp launch.json`,
      'echo "@@$how $job"',
    ].join("\n");
    const result = await this.exec(script, false, 60_000);
    if (result.code !== 0)
      throw new A3rError(
        "LAUNCH_FAILED",
        `could not submit ${ref.blueprintId} to Slurm on ${this.host}: ${result.stderr.trim().slice(0, 400) || `exit ${result.code}`}`,
        { hint: `check the partition, account and sbatch_options of ${this.host} in hosts.yaml (a3r hosts check)` },
      );
    const outcome = /^@@(new|adopted|exists)(?: (\d+))?$/m.exec(result.stdout);
    if (!outcome) throw remoteFailure(this.host, this.shell.where, "sbatch printed no job id", `${result.stdout}\n${result.stderr}`);
    return { ref, host: this.host, started: outcome[1] === "new", pgid: null };
  }

  /** squeue + sacct for all the refs, then their files: one command. */
  private async lookUp(refs: RunRef[]): Promise<RunProgress[]> {
    const dirs = await Promise.all(refs.map((ref) => this.runDir(ref)));
    const names = refs.map(jobNameOf).join(",");
    const script = [
      // Slurm is asked before the files are read: a job it calls ended has already exited,
      // so the finish.flag its worker wrote is there to read (never a false "lost").
      `echo @@squeue; squeue -h -t all --me --name=${shellQuote(names)} -o ${shellQuote(squeueFormat)}; echo "@@squeue-exit $?"`,
      `echo @@sacct; sacct -n -X -P --name=${shellQuote(names)} -S now-60days -o ${sacctFields} 2>/dev/null; echo "@@sacct-exit $?"`,
      // The last start's record before the files: a requeued start reopens the run, then
      // appends its record (slurm-job.ts), so a record read first is never newer than the
      // end read after it (the other order saw the old cancelled end with the new start's
      // record, and took the run for finished).
      `for d in ${dirs.map(shellQuote).join(" ")}; do echo @@run; echo @@starts; tail -n 1 "$d/result/slurm-starts.jsonl" 2>/dev/null; echo; tail -v -n +1 "$d/launch.json" "$d/result/status.json" "$d/result/finish.flag" 2>/dev/null; echo; echo @@metrics; tail -n 5 "$d/result/metrics.jsonl" 2>/dev/null; echo; echo @@log; tail -n 2 "$d/worker.log" 2>/dev/null | cut -c 1-200; echo; echo @@aside; cat "$d/set-aside-jobs" 2>/dev/null; echo; done`,
      // How often Slurm restarted each job (no %-letter has it); a job requeued since the
      // run's last recorded start is one whose cancelled end its next start reopens. Asked
      // after the files: Slurm counts a requeue before its TERM reaches the worker, so a
      // cancelled end read above is never newer than the count read here (asked before, a
      // preemption between the two read as a final cancel). Asked twice before giving up:
      // without it a requeue's cancelled end would read as final.
      `restarts() { squeue -h -t all --me --name=${shellQuote(names)} -O JobID,RestartCnt 2>/dev/null; }`,
      'echo @@restarts; restarts || { sleep 1; restarts; }; echo "@@restarts-exit $?"',
    ].join("\n");
    const result = await this.exec(script, true, 60_000);
    const squeueText = between(result.stdout, "@@squeue\n", "@@squeue-exit");
    const squeueExit = /^@@squeue-exit (\d+)$/m.exec(result.stdout)?.[1];
    if (squeueExit !== "0")
      // Slurm unreachable is not "every run lost": the dispatcher retries next cycle.
      throw new A3rError(
        "REMOTE_COMMAND_FAILED",
        `squeue failed on ${this.shell.where} for ${this.host}: ${(squeueText || result.stderr).trim().slice(0, 300)}`,
        {
          hint: "check that slurmctld answers there (sinfo), and slurm_conf in hosts.yaml",
        },
      );
    const squeue = parseSqueue(squeueText);
    const sacct = /^@@sacct-exit 0$/m.test(result.stdout) ? parseSacct(between(result.stdout, "@@sacct\n", "@@sacct-exit")) : [];
    const restarts = /^@@restarts-exit 0$/m.test(result.stdout) ? parseRestarts(between(result.stdout, "@@restarts\n", "@@restarts-exit")) : undefined;
    const blocks = result.stdout
      .split(/^@@restarts$/m)[0]!
      .split(/^@@run$/m)
      .slice(1);
    return refs.map((ref, index) => {
      const { files, logTail, setAsideJobs, lastStart } = runFiles(blocks[index] ?? "");
      const current = (job: SlurmJobView) => !setAsideJobs.has(job.jobId);
      const found = jobOfRun(jobNameOf(ref), parseJobId(files.launch), squeue.filter(current), sacct.filter(current));
      const job = found && restarts?.has(found.jobId) ? { ...found, restarts: restarts.get(found.jobId)! } : found;
      const progress = slurmProgress(ref, this.host, files, job, new Date(), lastStart);
      // A job Slurm ended before its worker could write anything: the log says why.
      // Redacted: the reason travels into the leader's notes and reports.
      return progress.state === "lost" && logTail ? { ...progress, reason: `${progress.reason}; worker.log ends: ${redactSecrets(logTail)}` } : progress;
    });
  }

  async pollMany(refs: RunRef[]): Promise<RunProgress[]> {
    const progress: RunProgress[] = [];
    for (let start = 0; start < refs.length; start += 200) progress.push(...(await this.lookUp(refs.slice(start, start + 200))));
    return progress;
  }

  async poll(ref: RunRef): Promise<RunProgress> {
    return (await this.lookUp([ref]))[0]!;
  }

  async fetch(ref: RunRef, destination: string): Promise<FetchOutcome> {
    const resultDir = `${await this.runDir(ref)}/result`;
    const complete = (await this.shell.readFile(`${resultDir}/finish.flag`)) !== undefined;
    const names = complete
      ? // Dot files are locks and temp files of atomic writes, not results.
        (await this.shell.listFiles(resultDir)).filter((relative) => !relative.split("/").some((part) => part.startsWith(".")))
      : [...liveFiles];
    await mkdir(destination, { recursive: true });
    const files: string[] = [];
    for (const relative of names) {
      const content = await this.shell.readFile(`${resultDir}/${relative}`);
      if (content === undefined) continue; // gone since the listing (a temp file renamed)
      await writeFileAtomic(join(destination, relative), content);
      files.push(relative);
    }
    return { files: files.sort(), complete };
  }

  async cancel(ref: RunRef): Promise<boolean> {
    const q = shellQuote(await this.runDir(ref));
    // The worker stops the run within the blueprint's grace period and records `cancelled`: the
    // plain scancel (KILL) comes only after that, however short the host's cancel_grace.
    const blueprint = (await this.exec(`cat ${q}/blueprint.md 2>/dev/null; true`, true)).stdout;
    const blueprintWaitMs = cancelWaitMs(blueprintGraceMs(blueprint.trim() === "" ? undefined : blueprint));
    const graceMs = Math.max(blueprintWaitMs, this.options.host.cancel_grace === undefined ? 10_000 : parseDuration(this.options.host.cancel_grace)!);
    const rounds = Math.max(1, Math.ceil(graceMs / 200));
    const script = [
      `cd ${q} 2>/dev/null || { echo none; exit 0; }`,
      // Said first: a requeue racing this cancel must not reopen the run (slurm-job.ts batchScript).
      "[ -e launch.json ] && : > cancel-requested",
      `job=$(sed -n 's/.*"jobId":"\\([0-9]*\\)".*/\\1/p' launch.json 2>/dev/null)`,
      freshJobs,
      `[ -n "$job" ] || job=$(squeue -h --me --name=${shellQuote(jobNameOf(ref))} -o %A 2>/dev/null | fresh | sort -n | tail -n 1)`,
      `[ -n "$job" ] || { echo none; exit 0; }`,
      `state() { squeue -h -j "$job" -o %T 2>/dev/null; }`,
      `active() { case "$(state)" in ${activeStates}) return 0;; *) return 1;; esac; }`,
      "active || { echo none; exit 0; }",
      // A job still waiting has no worker to tell: it is simply taken off the queue.
      `case "$(state)" in PENDING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED) scancel "$job"; echo signalled; exit 0;; esac`,
      `scancel --signal=TERM --full "$job"`,
      `i=0; while active && [ $i -lt ${rounds} ]; do sleep 0.2; i=$((i+1)); done`,
      `active && scancel "$job"`,
      "echo signalled",
    ].join("\n");
    const result = await this.exec(script, true, graceMs + 30_000);
    return result.stdout.trim().endsWith("signalled");
  }

  /**
   * Moves a finished run's folder aside (renamed, never deleted) so the ref can be launched
   * afresh; refused while its job is active. The fresh folder keeps `set-aside-jobs`, the
   * ids of the earlier jobs of that name: squeue and sacct still list them, and neither a
   * launch nor a poll may take one for the new run.
   */
  async setAside(ref: RunRef): Promise<boolean> {
    const q = shellQuote(await this.runDir(ref));
    const name = shellQuote(jobNameOf(ref));
    const script = [
      `[ -d ${q} ] || { echo none; exit 0; }`,
      `cd ${q} || exit 3`,
      `jobs=$( { sed -n 's/.*"jobId":"\\([0-9]*\\)".*/\\1/p' launch.json 2>/dev/null; cat set-aside-jobs 2>/dev/null; squeue -h -t all --me --name=${name} -o %A 2>/dev/null; sacct -n -X -P --name=${name} -S now-60days -o JobID 2>/dev/null; } | grep -E '^[0-9]+$' | sort -un)`,
      `activeJob() { for job in $jobs; do case "$(squeue -h -j "$job" -o %T 2>/dev/null)" in ${activeStates}) return 0;; esac; done; return 1; }`,
      // finish.flag is the worker's last write: its job is ending, give it a moment to.
      "i=0; while [ -e result/finish.flag ] && activeJob && [ $i -lt 75 ]; do sleep 0.2; i=$((i+1)); done",
      "if activeJob; then echo running; exit 0; fi",
      "cd ..",
      `aside=${q}.set-aside-$(date -u +%Y%m%dT%H%M%SZ)`,
      `mv ${q} "$aside" && mkdir ${q} && printf '%s\\n' $jobs > ${q}/set-aside-jobs && echo moved`,
    ].join("\n");
    const answer = (await this.exec(script, false)).stdout.trim();
    if (answer === "running")
      throw new A3rError("LAUNCH_FAILED", `${ref.blueprintId} on ${this.host} is still running (or waiting) in Slurm; stop it before setting it aside`, {
        hint: `a3r stop ${ref.campaign}/${ref.blueprintId}`,
      });
    return answer === "moved";
  }

  /** The worker inside the job reads it from the shared result folder, as it would on any host. */
  async requestStop(ref: RunRef, request: StopRequest): Promise<boolean> {
    return stopRequestAnswer(this.host, await this.exec(stopRequestScript(`${await this.runDir(ref)}/result`, request), true));
  }

  async list(): Promise<RunRef[]> {
    return refsOfMarkerListing((await this.exec(listMarkersScript(shellQuote(await this.workdir())), true)).stdout);
  }

  /** What the partition offers now (`sinfo`): the scheduler's slots for this host. */
  async capacity(): Promise<SlurmCapacity> {
    const result = await this.exec("sinfo -h -N -o '%N|%P|%c|%G|%t'", true);
    if (result.code !== 0) throw remoteFailure(this.host, this.shell.where, "sinfo failed", result.stderr || result.stdout);
    return parseSinfo(result.stdout, this.options.host.partition, this.options.host.gres);
  }

  async close(): Promise<void> {
    await this.options.shell.close();
  }
}

function remoteFailure(host: string, where: string, what: string, stderr: string): A3rError {
  return new A3rError("REMOTE_COMMAND_FAILED", `${host} (${where}): ${what}: ${stderr.trim().slice(0, 300)}`, {
    hint: "check the workdir and slurm_conf in hosts.yaml and that the Slurm client commands work there (a3r hosts check)",
  });
}

function between(text: string, start: string, end: string): string {
  const from = text.indexOf(start);
  if (from < 0) return "";
  const to = text.indexOf(end, from + start.length);
  return text.slice(from + start.length, to < 0 ? undefined : to);
}

/** One run's block of the poll output: `tail -v` headers name the files, then the metrics tail. */
function runFiles(block: string): { files: RawRunFiles; logTail: string | undefined; setAsideJobs: Set<string>; lastStart: SlurmStart | undefined } {
  const files: Record<string, string> = {};
  const byFile: Record<string, keyof RawRunFiles> = { "launch.json": "launch", "status.json": "status", "finish.flag": "finish" };
  let current: string | undefined;
  for (const line of block.split("\n")) {
    const header = /^==> .*\/([^/]+) <==$/.exec(line);
    if (header) {
      current = byFile[header[1]!];
      if (current) files[current] = "";
      continue;
    }
    if (line === "@@metrics" || line === "@@log" || line === "@@aside" || line === "@@starts") {
      current = line.slice(2) === "metrics" ? "metricsTail" : line.slice(2);
      files[current] = "";
      continue;
    }
    if (current) files[current] += `${line}\n`;
  }
  const nonEmpty = (text: string | undefined) => (text === undefined || text.trim() === "" ? undefined : text);
  return {
    files: { launch: nonEmpty(files.launch), status: nonEmpty(files.status), finish: nonEmpty(files.finish), metricsTail: nonEmpty(files.metricsTail) },
    // Printable characters only: the reason lands in a terminal table.
    logTail: nonEmpty(files.log)
      ?.trim()
      .split("\n")
      .map((line) => [...line].filter((character) => character >= " " && character !== "\u007f").join(""))
      .join(" / "),
    lastStart: parseSlurmStart(files.starts),
    setAsideJobs: new Set(
      (files.aside ?? "")
        .split("\n")
        .filter((line) => /^\d+$/.test(line.trim()))
        .map((line) => line.trim()),
    ),
  };
}
