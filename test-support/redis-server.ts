import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, stopProcess, waitForPort } from "./free-port.ts";

/**
 * A real redis-server for one test file: its own port and data folder, no persistence,
 * and `maxmemory-policy noeviction` (BullMQ loses jobs under any evicting policy).
 *
 * ```ts
 * const redis = await startRedisServer();
 * // ... new Queue("q", { connection: { url: redis.url } }) ...
 * await redis.stop();
 * ```
 */
export interface RedisServerHandle {
  port: number;
  url: string;
  dir: string;
  stop(): Promise<void>;
}

export const redisServerBinary = process.env.A3R_REDIS_SERVER ?? "/usr/bin/redis-server";

export async function startRedisServer(options: { extraArguments?: string[]; attempts?: number } = {}): Promise<RedisServerHandle> {
  const dir = await mkdtemp(join(tmpdir(), "a3r-redis-"));
  let lastError: unknown;
  for (let attempt = 0; attempt < (options.attempts ?? 3); attempt += 1) {
    const port = await freePort();
    const child = spawn(
      redisServerBinary,
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "no",
        "--maxmemory-policy",
        "noeviction",
        "--loglevel",
        "warning",
        ...(options.extraArguments ?? []),
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const spawned = await new Promise<boolean>((resolve) => {
      child.once("spawn", () => resolve(true));
      child.once("error", (error) => {
        lastError = new Error(`cannot start ${redisServerBinary}: ${error.message} (install redis-server, as .ci/run does)`);
        resolve(false);
      });
    });
    if (!spawned) break;
    try {
      await waitForPort(port, 10_000, child);
      return {
        port,
        url: `redis://127.0.0.1:${port}`,
        dir,
        stop: async () => {
          await stopProcess(child);
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      lastError = new Error(`${(error as Error).message}: ${stderr}`);
      await stopProcess(child);
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError ?? new Error("redis-server did not start");
}
