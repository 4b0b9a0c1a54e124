import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { z } from "zod";

/**
 * What the worker does when it can no longer write its own result directory (a full disk,
 * a folder made read-only or taken away from it): it must not leave the training running
 * unwatched, and it must leave the truth somewhere a person and the next worker find it.
 * The record (`<run folder>.worker-failure.json`, next to the run folder; in the system's
 * temp folder when that fails too) says which write failed, why, and how the worker
 * stopped each process group. A worker started again on the run reads it and finishes the
 * run as `failed` with that reason instead of guessing from a missing exit file.
 */
const pathlessStorageCodes = new Set(["ENOSPC", "EDQUOT", "EROFS", "EIO"]);
const storageErrnoCodes = new Set(["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO", "ENOTDIR", "EISDIR", "ENOENT"]);

/**
 * The errno exception behind an error (or its causes) when it is a file operation on the
 * result directory that failed; anything else (a bug, a lost lease) is not this case.
 */
export function storageFailureOf(error: unknown, resultDir: string): NodeJS.ErrnoException | undefined {
  const inside = (path: string) => path === resultDir || path.startsWith(`${resultDir}/`);
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    const errno = current as NodeJS.ErrnoException;
    if (typeof errno.code !== "string" || !storageErrnoCodes.has(errno.code)) continue;
    if (typeof errno.path === "string") {
      if (inside(errno.path)) return errno;
      continue;
    }
    // A write through an open file names no path; only the disk itself fails that way
    // (process.kill's EPERM, which names no path either, is not a storage failure).
    if (pathlessStorageCodes.has(errno.code)) return errno;
  }
  return undefined;
}

export const stopOutcomeSchema = z.object({ role: z.string(), pid: z.number().int(), outcome: z.string() });

export const storageFailureRecordSchema = z.object({
  a3r: z.literal("worker-failure/v1"),
  resultDir: z.string(),
  state: z.literal("failed"),
  reason: z.string(),
  attempt: z.number().int().nonnegative(),
  time: z.string(),
  error: z.object({ code: z.string(), syscall: z.string().nullable(), path: z.string().nullable(), message: z.string() }),
  stopped: z.array(stopOutcomeSchema),
});

export type StorageFailureRecord = z.infer<typeof storageFailureRecordSchema>;
export type StopOutcome = z.infer<typeof stopOutcomeSchema>;

/** Where the record goes, in order of preference: next to the run folder, then the temp folder. */
export function storageFailureRecordPaths(resultDir: string): string[] {
  const tag = createHash("sha256").update(resultDir).digest("hex").slice(0, 16);
  return [join(dirname(resultDir), `${basename(resultDir)}.worker-failure.json`), join(tmpdir(), "a3r-worker-failures", `${tag}.json`)];
}

export function describeStorageFailure(error: NodeJS.ErrnoException): string {
  const what = error.code === "ENOSPC" || error.code === "EDQUOT" ? "no space left" : error.code === "EROFS" ? "read-only file system" : "not writable";
  return `${error.code} (${what}) on ${error.syscall ?? "write"}${error.path ? ` ${error.path}` : ""}`;
}

export function storageFailureRecord(
  resultDir: string,
  attempt: number,
  error: NodeJS.ErrnoException,
  stopped: StopOutcome[],
  now = new Date(),
): StorageFailureRecord {
  const stops = stopped.length === 0 ? "no process was running" : stopped.map((stop) => `${stop.role} (pid ${stop.pid}) ${stop.outcome}`).join(", ");
  return {
    a3r: "worker-failure/v1",
    resultDir,
    state: "failed",
    reason: `the worker could not write its result directory (${describeStorageFailure(error)}) and stopped the run at attempt ${attempt}: ${stops}`,
    attempt,
    time: now.toISOString(),
    error: { code: error.code ?? "?", syscall: error.syscall ?? null, path: error.path ?? null, message: error.message },
    stopped,
  };
}

/**
 * Writes the record where it can; returns the path, or null when no location took it. Each
 * write goes to a temporary file renamed into place, so a disk that fills up mid-write
 * leaves no empty or torn record beside the run (the temporary file is removed).
 */
export async function saveStorageFailureRecord(record: StorageFailureRecord): Promise<string | null> {
  const text = `${JSON.stringify(record, null, 2)}\n`;
  for (const path of storageFailureRecordPaths(record.resultDir)) {
    const partial = `${path}.${process.pid}.partial`;
    try {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(partial, text);
      await rename(partial, path);
      return path;
    } catch {
      await rm(partial, { force: true }).catch(() => undefined);
      // The next location, or only stderr and the exit code are left.
    }
  }
  return null;
}

/** The record a worker that gave up on this run left, if any (a broken one is ignored). */
export async function findStorageFailureRecord(resultDir: string): Promise<{ path: string; record: StorageFailureRecord } | undefined> {
  for (const path of storageFailureRecordPaths(resultDir)) {
    const text = await readFile(path, "utf8").catch(() => undefined);
    if (text === undefined) continue;
    if (text.trim() === "") {
      // An empty record (an older worker's write that the full disk cut off) says nothing: not left beside the run.
      await rm(path, { force: true }).catch(() => undefined);
      continue;
    }
    try {
      const parsed = storageFailureRecordSchema.safeParse(JSON.parse(text));
      if (parsed.success && parsed.data.resultDir === resultDir) return { path, record: parsed.data };
    } catch {
      // Torn or foreign: not ours.
    }
  }
  return undefined;
}

export async function removeStorageFailureRecord(path: string): Promise<void> {
  await rm(path, { force: true });
}
