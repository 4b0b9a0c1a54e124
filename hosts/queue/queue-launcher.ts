import { join } from "node:path";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { blueprintTextForCopy, parseBlueprint } from "../../blueprints/index.ts";
import { describeProgress } from "../port/run-progress.ts";
import {
  parseRunKey,
  runKey,
  type FetchOutcome,
  type LaunchOutcome,
  type LaunchRequest,
  type Launcher,
  type RunProgress,
  type RunRef,
} from "../port/launcher.ts";
import { openCheckedRedis, recordKeys, type LaunchJob } from "./queue-records.ts";

/**
 * Puts blueprints on a BullMQ queue that worker daemons pull from (`a3r hosts daemon`).
 * The job id is `<campaign>+<blueprint id>` and a Redis set records every dispatch, so a
 * second launch adds nothing. Progress and results come back through Redis (see
 * queue-records.ts), never through a shared filesystem.
 *
 * Left out: which daemon and which GPUs (the daemon that pulls decides; `gpuIndices` of
 * the request are ignored), and results larger than the bundle (logs stay on the node).
 */
export interface QueueLauncherOptions {
  host: string;
  redisUrl: string;
  queue?: string;
  prefix?: string;
}

export class QueueLauncher implements Launcher {
  readonly kind = "queue" as const;
  readonly host: string;
  private readonly keys: ReturnType<typeof recordKeys>;

  private constructor(
    private readonly options: QueueLauncherOptions,
    private readonly redis: Redis,
    private readonly queue: Queue,
  ) {
    this.host = options.host;
    this.keys = recordKeys({ queue: options.queue ?? "a3r", prefix: options.prefix ?? "bull" });
  }

  static async open(options: QueueLauncherOptions): Promise<QueueLauncher> {
    const redis = await openCheckedRedis(options.redisUrl);
    const queue = new Queue(options.queue ?? "a3r", { connection: { url: options.redisUrl, maxRetriesPerRequest: null }, prefix: options.prefix ?? "bull" });
    queue.on("error", () => undefined);
    return new QueueLauncher(options, redis, queue);
  }

  async launch(request: LaunchRequest): Promise<LaunchOutcome> {
    const ref = { campaign: request.campaign, blueprintId: request.blueprintId };
    const key = runKey(ref);
    const text = await blueprintTextForCopy(request.blueprintFile);
    const gpus = Number(parseBlueprint(text, request.blueprintFile).frontMatter.gpus ?? 0);
    const first = (await this.redis.sadd(this.keys.dispatched, key)) === 1;
    const data: LaunchJob = {
      campaign: ref.campaign,
      blueprintId: ref.blueprintId,
      blueprint: text,
      gpus: Number.isInteger(gpus) && gpus >= 0 ? gpus : 0,
      ...(request.llmAllowance === undefined ? {} : { llmAllowance: request.llmAllowance }),
    };
    // Added even when the set already had the key: a dispatcher that died between the two
    // steps left no job, and BullMQ ignores the add when the job id exists.
    await this.queue.add("launch", data, { jobId: key, removeOnComplete: false, removeOnFail: false });
    return { ref, host: this.host, started: first, pgid: null };
  }

  async poll(ref: RunRef): Promise<RunProgress> {
    const record = await this.redis.hgetall(this.keys.run(ref));
    if (record.progress) {
      const progress = JSON.parse(record.progress) as RunProgress;
      return { ...progress, ref, host: this.host };
    }
    const job = await this.queue.getJob(runKey(ref));
    if (!job) return describeProgress(ref, this.host, {});
    const state = await job.getState();
    const base = describeProgress(ref, this.host, { launch: "" });
    if (state === "failed") return { ...base, state: "failed", reason: job.failedReason };
    return { ...base, state: "launching", reason: state === "completed" ? "launched; waiting for the first report" : `queued (${state})` };
  }

  pollMany(refs: RunRef[]): Promise<RunProgress[]> {
    return Promise.all(refs.map((ref) => this.poll(ref)));
  }

  async fetch(ref: RunRef, destination: string): Promise<FetchOutcome> {
    const record = await this.redis.hgetall(this.keys.run(ref));
    const files: string[] = [];
    for (const [field, content] of Object.entries(record)) {
      if (!field.startsWith("file:")) continue;
      const name = field.slice("file:".length);
      await writeFileAtomic(join(destination, name), content);
      files.push(name);
    }
    return { files: files.sort(), complete: record.finished === "1" && files.includes("finish.flag") };
  }

  async cancel(ref: RunRef): Promise<boolean> {
    const job = await this.queue.getJob(runKey(ref));
    const state = job ? await job.getState() : "unknown";
    if (job && (state === "waiting" || state === "delayed" || state === "prioritized")) {
      // Not launched yet: taking it off the queue is the whole cancel.
      await job.remove();
      return true;
    }
    const record = await this.redis.hgetall(this.keys.run(ref));
    if (!record.daemon || record.finished === "1") return false;
    await this.redis.hset(this.keys.run(ref), "cancel", "1");
    return true;
  }

  async list(): Promise<RunRef[]> {
    const keys = await this.redis.smembers(this.keys.dispatched);
    return keys
      .sort()
      .map(parseRunKey)
      .filter((ref): ref is RunRef => ref !== undefined);
  }

  async close(): Promise<void> {
    await this.queue.close();
    this.redis.disconnect();
  }
}
