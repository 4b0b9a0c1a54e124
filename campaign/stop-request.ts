import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeJsonAtomic } from "../core/atomic-file.ts";

/**
 * `<result dir>/stop-request.json`: someone other than the worker (the leader's early
 * stopping, through a launcher's `requestStop`) asks the worker supervising the run to stop
 * it and end it in `state`. It is the one file of a result directory that a foreign writer
 * is expected to write: the worker reads it every poll, never rewrites it, and records the
 * request's evidence in events.jsonl (`run.stop-requested`) before it stops the run.
 *
 * ```json
 * { "state": "stopped_early", "reason": "rung 1 (step 5 of 20): 0.12 is 0.6 below the best 0.72",
 *   "evidence": { "rung": 1, "step": 5, "score": 0.12, "best": 0.72, "rule": "..." } }
 * ```
 *
 * Writing it again with the same content is harmless (a leader re-run after a crash does).
 */
export const stopRequestFileName = "stop-request.json";

/** Larger files are refused unread: a request is a few hundred bytes. */
const maxStopRequestBytes = 64 * 1024;

export const stopRequestSchema = z.object({
  state: z.literal("stopped_early"),
  reason: z.string().min(1).max(2000),
  evidence: z.record(z.string(), z.unknown()).default({}),
  requestedAt: z.string().optional(),
});

export type StopRequest = z.infer<typeof stopRequestSchema>;

export type StopRequestRead = { kind: "none" } | { kind: "request"; request: StopRequest } | { kind: "invalid"; problem: string };

export function stopRequestPath(resultDir: string): string {
  return join(resultDir, stopRequestFileName);
}

/** Writes the request atomically (temp + rename), so a worker never reads half of one. */
export async function writeStopRequest(resultDir: string, request: StopRequest): Promise<void> {
  await writeJsonAtomic(stopRequestPath(resultDir), stopRequestSchema.parse(request));
}

/** What the result directory holds; a file that is not a valid request is `invalid` with why, never thrown. */
export async function readStopRequest(resultDir: string): Promise<StopRequestRead> {
  let text: string;
  try {
    const buffer = await readFile(stopRequestPath(resultDir));
    if (buffer.length > maxStopRequestBytes)
      return { kind: "invalid", problem: `${stopRequestFileName} is ${buffer.length} bytes, more than ${maxStopRequestBytes}` };
    text = buffer.toString("utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { kind: "none" };
    return { kind: "invalid", problem: `${stopRequestFileName} cannot be read: ${(error as Error).message}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "invalid", problem: `${stopRequestFileName} is not JSON` };
  }
  const parsed = stopRequestSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { kind: "invalid", problem: `${stopRequestFileName} field ${issue.path.join(".") || "(root)"}: ${issue.message}` };
  }
  return { kind: "request", request: parsed.data };
}
