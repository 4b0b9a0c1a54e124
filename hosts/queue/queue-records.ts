import { Redis } from "ioredis";
import { z } from "zod";
import { A3rError } from "../../core/errors.ts";
import { runKey, type RunRef } from "../port/launcher.ts";

/**
 * What the queue backend keeps in Redis besides BullMQ's own keys, all under
 * `<prefix>:<queue>:a3r:`:
 *
 * - `dispatched` (set of run keys): every run ever launched through this queue; adding to
 *   it is the dispatcher's idempotency check.
 * - `claim:<run key>` (string, the daemon's name, set with NX): which daemon owns a run.
 *   A job redelivered after a daemon died goes to its owner's re-attach, never to a
 *   second launch elsewhere.
 * - `run:<run key>` (hash): `daemon`, `progress` (RunProgress JSON), `finished` ("1"),
 *   `cancel` ("1" asks the owner to cancel), and `file:<name>` for the live copy (status,
 *   metrics tail) and, once finished, the small bundle.
 *
 * Left out: expiry (records are small and a campaign's history is worth keeping; delete
 * the keys with the queue) and large files (logs stay on the host).
 */
export interface QueueNames {
  queue: string;
  prefix: string;
}

export function recordKeys(names: QueueNames) {
  const base = `${names.prefix}:${names.queue}:a3r`;
  return {
    dispatched: `${base}:dispatched`,
    claim: (ref: RunRef) => `${base}:claim:${runKey(ref)}`,
    run: (ref: RunRef) => `${base}:run:${runKey(ref)}`,
  };
}

/** The BullMQ job's data: the blueprint travels as text, so daemons need no shared disk. */
export const launchJobSchema = z.object({
  campaign: z.string(),
  blueprintId: z.string(),
  blueprint: z.string().max(1024 * 1024),
  gpus: z.number().int().min(0),
  llmAllowance: z.object({ tokens: z.number().positive().optional(), usd: z.number().positive().optional() }).optional(),
});

export type LaunchJob = z.infer<typeof launchJobSchema>;

/** Largest file carried in the bundle; a longer metrics.jsonl keeps its last lines. */
export const bundleFileLimit = 512 * 1024;

export function openRedis(url: string): Redis {
  // Commands time out instead of waiting forever for a Redis that went away; BullMQ's own
  // connections keep BullMQ's settings.
  const redis = new Redis(url, {
    maxRetriesPerRequest: 3,
    commandTimeout: 10_000,
    lazyConnect: true,
    connectTimeout: 5000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  redis.on("error", () => {
    // Reported through the failing command; ioredis keeps reconnecting meanwhile.
  });
  return redis;
}

/** Connects within `timeoutMs` or throws REDIS_UNREACHABLE naming the URL. */
export async function connectRedis(redis: Redis, url: string, timeoutMs = 5000): Promise<void> {
  const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref());
  try {
    await Promise.race([redis.connect(), timer]);
    await Promise.race([redis.ping(), timer]);
  } catch (error) {
    redis.disconnect();
    throw new A3rError("REDIS_UNREACHABLE", `cannot reach Redis at ${redactUrl(url)}: ${(error as Error).message}`, {
      hint: "check the URL and that redis-server runs there",
    });
  }
}

/**
 * BullMQ needs `maxmemory-policy noeviction`: under any evicting policy Redis may drop
 * job keys when memory runs short, and runs would vanish or start twice.
 */
export async function assertNoEviction(redis: Redis, url: string): Promise<void> {
  const info = await redis.info("memory");
  const policy = /maxmemory_policy:(\S+)/.exec(info)?.[1];
  if (policy !== "noeviction") {
    throw new A3rError("REDIS_POLICY_INVALID", `Redis at ${redactUrl(url)} runs with maxmemory-policy ${policy ?? "unknown"}; a3r needs noeviction`, {
      hint: "run CONFIG SET maxmemory-policy noeviction (and set it in redis.conf), then start again",
    });
  }
}

/** Opens, connects and checks the eviction policy: the way every queue component meets Redis. */
export async function openCheckedRedis(url: string): Promise<Redis> {
  const redis = openRedis(url);
  await connectRedis(redis, url);
  try {
    await assertNoEviction(redis, url);
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  return redis;
}

export function redactUrl(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, "//***@");
}
