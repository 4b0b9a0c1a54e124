import { readFile } from "node:fs/promises";
import { readFrontMatter } from "../../blueprints/front-matter.ts";
import { parseDuration } from "../../core/duration.ts";

/**
 * How long a launcher's cancel waits for the worker after TERM before it KILLs it. The
 * worker, told to stop, gives the run's process groups TERM and the blueprint's grace period
 * before KILL, then the run's escaped processes the same again, and then writes the run's
 * end (status.json `cancelled`, attempts.md, result.md, finish.flag). A launcher that KILLs
 * it sooner (the local launcher did at 5 s against a 10 s grace) leaves the run recorded as a
 * failure instead of the stop it was. The wait ends as soon as the worker has.
 */
export const workerDefaultGraceMs = 30_000;
/** The worker's own writes after the last stop. */
export const workerWriteMarginMs = 5_000;

export function cancelWaitMs(graceMs: number): number {
  return 2 * graceMs + workerWriteMarginMs;
}

/** The grace period (`worker: { grace_period }`) of a blueprint's text; the worker's default when it says none. */
export function blueprintGraceMs(blueprintText: string | undefined): number {
  if (blueprintText === undefined) return workerDefaultGraceMs;
  const worker = readFrontMatter(blueprintText).data.worker as { grace_period?: unknown } | undefined;
  const value = worker?.grace_period;
  const parsed = typeof value === "string" || typeof value === "number" ? parseDuration(value) : undefined;
  return parsed !== undefined && parsed >= 0 ? parsed : workerDefaultGraceMs;
}

/** cancelWaitMs for the blueprint file a launcher copied to the host (the worker's default when unreadable). */
export async function cancelWaitOfBlueprintFile(path: string): Promise<number> {
  return cancelWaitMs(blueprintGraceMs(await readFile(path, "utf8").catch(() => undefined)));
}
