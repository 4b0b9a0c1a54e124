import type { ResultDirWriter } from "../../campaign/index.ts";

/**
 * Keeps the run's heartbeat (and so its lease) going while the worker waits on something
 * slow that is not the supervision loop: a swarm server booting, a model diagnosing. A
 * failed heartbeat is left to the next one; the loop's own heartbeat reports LEASE_LOST.
 */
export async function withHeartbeat<T>(writer: ResultDirWriter, intervalMs: number, action: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => {
    writer.heartbeat().catch(() => undefined);
  }, intervalMs);
  try {
    return await action();
  } finally {
    clearInterval(timer);
  }
}
