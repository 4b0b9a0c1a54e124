import { randomUUID, createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { A3rError } from "../../core/errors.ts";
import { bundleFiles, liveFiles, runKey, type RunProgress, type RunRef } from "../port/launcher.ts";
import { LocalLauncher } from "../local/local-launcher.ts";
import { readTail, readText } from "../port/run-files.ts";
import { bundleFileLimit, launchJobSchema, openCheckedRedis, recordKeys, type LaunchJob } from "./queue-records.ts";
import { scheduleBlueprints } from "../port/scheduler.ts";
import { pathExists } from "../../core/path-exists.ts";

/**
 * A worker daemon on a cluster node: pulls launch jobs from the BullMQ queue while it has
 * free GPU slots, starts each run detached through the local launcher, and reports the
 * runs' progress (and, at the end, a small result bundle) back into Redis.
 *
 * Why the BullMQ job is only the launch: a run may last days, and a job held that long
 * would need its lock renewed all along; if the daemon died, BullMQ would hand the job to
 * another worker and the run would start twice. Here the job completes right after the
 * detached start, and the run's truth stays in its result directory.
 *
 * Never twice: the daemon claims a run in Redis (SET NX with its name) before launching,
 * and the local launch is idempotent through launch.json. A daemon restarted after
 * SIGKILL finds its launched-but-unreported runs in its workdir and follows them again;
 * a job redelivered because it died mid-launch meets the claim and the marker.
 *
 * Left out: the worker's own supervision and recovery (each run is `a3r worker run`), GPU
 * health, and moving runs between daemons (a daemon that never comes back leaves its runs
 * stale in Redis; the leader sees the old `updatedAt`).
 */
export interface WorkerDaemonOptions {
  redisUrl: string;
  queue?: string;
  prefix?: string;
  /** GPUs on this node; runs get CUDA_VISIBLE_DEVICES from 0..gpus-1. */
  gpus: number;
  /** Most runs at once (CPU-only runs count too); default max(gpus, 1). */
  maxRuns?: number;
  workdir: string;
  /** How to call a3r on this node. */
  a3r: string;
  /** Stable across restarts: it owns the claims. Default: host name + hash of the workdir. */
  name?: string;
  reportIntervalMs?: number;
  /** BullMQ lock of the short launch job; a daemon killed mid-launch releases it after this. */
  lockDurationMs?: number;
  log?: (line: string) => void;
}

interface TrackedRun {
  ref: RunRef;
  gpuIndices: number[];
}

export class WorkerDaemon {
  readonly name: string;
  /** Runs this daemon instance started (not re-attached ones). */
  launchesStarted = 0;
  reattached = 0;
  /** The most runs this instance followed at once (slots are never exceeded). */
  peakRuns = 0;
  private readonly tracked = new Map<string, TrackedRun>();
  private readonly local: LocalLauncher;
  private readonly keys: ReturnType<typeof recordKeys>;
  private readonly workdir: string;
  private stopping = false;
  private pulling: Promise<void> | undefined;
  private reporting: Promise<void> | undefined;
  private worker: Worker | undefined;

  private constructor(
    private readonly options: WorkerDaemonOptions,
    private readonly redis: Redis,
  ) {
    this.workdir = resolve(options.workdir);
    this.name = options.name ?? `${hostname()}-${createHash("sha256").update(this.workdir).digest("hex").slice(0, 8)}`;
    this.local = new LocalLauncher({ host: this.name, workdir: join(this.workdir, "runs"), a3r: options.a3r });
    this.keys = recordKeys({ queue: options.queue ?? "a3r", prefix: options.prefix ?? "bull" });
  }

  /** Checks Redis (reachable, noeviction), re-attaches to live runs, then starts pulling. */
  static async start(options: WorkerDaemonOptions): Promise<WorkerDaemon> {
    if (!Number.isInteger(options.gpus) || options.gpus < 0)
      throw new A3rError("USAGE", `--gpus must be a whole number >= 0, got ${options.gpus}`, { where: "--gpus" });
    const redis = await openCheckedRedis(options.redisUrl);
    const daemon = new WorkerDaemon(options, redis);
    await mkdir(join(daemon.workdir, "inbox"), { recursive: true });
    await daemon.reattach();
    daemon.worker = new Worker(options.queue ?? "a3r", null, {
      connection: { url: options.redisUrl, maxRetriesPerRequest: null },
      prefix: options.prefix ?? "bull",
      autorun: false,
      drainDelay: 1,
      lockDuration: options.lockDurationMs ?? 30_000,
      stalledInterval: options.lockDurationMs ?? 30_000,
    });
    daemon.worker.on("error", (error) => daemon.log(`queue error: ${error.message}`));
    // In manual mode BullMQ does not look for stalled jobs unless asked.
    void daemon.worker.startStalledCheckTimer().catch(() => undefined);
    daemon.pulling = daemon.pullLoop();
    daemon.reporting = daemon.reportLoop();
    return daemon;
  }

  private log(line: string): void {
    this.options.log?.(`[${this.name}] ${line}`);
  }

  private get maxRuns(): number {
    return this.options.maxRuns ?? Math.max(this.options.gpus, 1);
  }

  private busy(): { busyGpus: number[]; runs: number } {
    const runs = [...this.tracked.values()];
    return { busyGpus: runs.flatMap((run) => run.gpuIndices), runs: runs.length };
  }

  /** Runs launched here that were never reported finished: follow them again. */
  private async reattach(): Promise<void> {
    for (const ref of await this.local.list()) {
      if (await pathExists(join(this.local.runDir(ref), "reported.flag"))) continue;
      const marker = await this.local.readMarker(ref);
      this.tracked.set(runKey(ref), { ref, gpuIndices: marker?.gpuIndices ?? [] });
      this.reattached += 1;
      this.log(`re-attached to ${runKey(ref)}`);
    }
  }

  private async pullLoop(): Promise<void> {
    while (!this.stopping) {
      const load = this.busy();
      // Pull only with a free slot (and a free GPU on a GPU node), so jobs wait in the
      // queue, where any daemon can take them, rather than here.
      if (load.runs >= this.maxRuns || (this.options.gpus > 0 && load.busyGpus.length >= this.options.gpus)) {
        await sleep(100);
        continue;
      }
      const token = `${this.name}:${randomUUID()}`;
      let job: Job | undefined;
      try {
        job = await this.worker!.getNextJob(token, { block: true });
      } catch (error) {
        if (this.stopping) return;
        this.log(`could not fetch a job: ${(error as Error).message}`);
        await sleep(500);
        continue;
      }
      if (!job) continue;
      try {
        await this.handle(job, token);
      } catch (error) {
        this.log(`launch of job ${job.id} failed: ${(error as Error).message}`);
        await job.moveToFailed(error as Error, token, false).catch(() => undefined);
      }
    }
  }

  private async handle(job: Job, token: string): Promise<void> {
    const parsed = launchJobSchema.safeParse(job.data);
    if (!parsed.success) {
      await job.moveToFailed(new Error(`job data is not a launch: ${parsed.error.issues[0]?.message ?? "invalid"}`), token, false);
      return;
    }
    const data: LaunchJob = parsed.data;
    const ref = { campaign: data.campaign, blueprintId: data.blueprintId };
    const key = runKey(ref);
    const claimKey = this.keys.claim(ref);
    const owner = (await this.redis.set(claimKey, this.name, "NX")) === "OK" ? this.name : await this.redis.get(claimKey);
    if (owner !== this.name) {
      // Another daemon owns this run (a redelivered job): launching here would run it twice.
      await job.moveToCompleted({ daemon: owner, duplicate: true }, token, false);
      return;
    }
    const marker = await this.local.readMarker(ref);
    if (marker) {
      if (!this.tracked.has(key) && !(await pathExists(join(this.local.runDir(ref), "reported.flag"))))
        this.tracked.set(key, { ref, gpuIndices: marker.gpuIndices });
      await job.moveToCompleted({ daemon: this.name, pgid: marker.pgid, reattached: true }, token, false);
      return;
    }
    const plan = scheduleBlueprints(
      [{ name: this.name, gpuIndices: Array.from({ length: this.options.gpus }, (_, index) => index), maxRuns: this.maxRuns }],
      { [this.name]: this.busy() },
      [{ blueprintId: data.blueprintId, gpus: data.gpus }],
    );
    const assignment = plan.assignments[0];
    if (!assignment) {
      await this.redis.del(claimKey);
      const unschedulable = plan.unschedulable[0];
      if (unschedulable) {
        await job.moveToFailed(new Error(`${this.name} cannot run it: ${unschedulable.reason}`), token, false);
      } else {
        // Fits here later, or on another daemon now: give it back and look again shortly.
        await job.moveToWait(token);
        await sleep(200);
      }
      return;
    }
    const runDir = this.local.runDir(ref);
    const blueprintFile = join(this.workdir, "inbox", `${key}.md`);
    await writeFile(blueprintFile, data.blueprint);
    const launch = await this.local.launch({
      ...ref,
      blueprintFile,
      gpuIndices: assignment.gpuIndices,
      resultDir: join(runDir, "result"),
      ...(data.llmAllowance === undefined ? {} : { llmAllowance: data.llmAllowance }),
    });
    if (launch.started) this.launchesStarted += 1;
    this.tracked.set(key, { ref, gpuIndices: assignment.gpuIndices });
    this.peakRuns = Math.max(this.peakRuns, this.tracked.size);
    await this.redis.multi().hset(this.keys.run(ref), { daemon: this.name, updatedAt: new Date().toISOString() }).sadd(this.keys.dispatched, key).exec();
    await job.moveToCompleted({ daemon: this.name, pgid: launch.pgid }, token, false);
    this.log(`launched ${key} on GPUs [${assignment.gpuIndices.join(",")}]`);
  }

  private async reportLoop(): Promise<void> {
    while (!this.stopping) {
      for (const [key, run] of [...this.tracked]) {
        if (this.stopping) return;
        try {
          await this.report(key, run);
        } catch (error) {
          this.log(`report of ${key} failed: ${(error as Error).message}`);
        }
      }
      await sleep(this.options.reportIntervalMs ?? 500);
    }
  }

  private async report(key: string, run: TrackedRun): Promise<void> {
    const recordKey = this.keys.run(run.ref);
    if ((await this.redis.hget(recordKey, "cancel")) === "1") {
      await this.local.cancel(run.ref);
      await this.redis.hdel(recordKey, "cancel");
    }
    const progress: RunProgress = await this.local.poll(run.ref);
    const resultDir = join(this.local.runDir(run.ref), "result");
    const fields: Record<string, string> = { daemon: this.name, progress: JSON.stringify(progress), updatedAt: new Date().toISOString() };
    const done = progress.finished || progress.state === "lost";
    for (const name of done ? bundleFiles : liveFiles) {
      const content = name === "metrics.jsonl" ? await readTail(join(resultDir, name), done ? bundleFileLimit : 16_384) : await readText(join(resultDir, name));
      if (content !== undefined) fields[`file:${name}`] = content.length > bundleFileLimit ? content.slice(0, bundleFileLimit) : content;
    }
    if (done) fields.finished = "1";
    await this.redis.hset(recordKey, fields);
    if (done) {
      // Reported for good: a restarted daemon will not follow this run again.
      await writeFile(join(this.local.runDir(run.ref), "reported.flag"), `${progress.state}\n`);
      this.tracked.delete(key);
      this.log(`${key} ended ${progress.state}`);
    }
  }

  get activeRuns(): RunRef[] {
    return [...this.tracked.values()].map((run) => run.ref);
  }

  /** Stops pulling and reporting; runs keep going, and a restarted daemon re-attaches. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.worker?.close(true).catch(() => undefined);
    await Promise.allSettled([this.pulling, this.reporting]);
    this.redis.disconnect();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
