import { mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { A3rError } from "../core/errors.ts";
import { isProcessGone } from "../core/process-group.ts";

/**
 * A short mutex between processes on one machine: the lock file is created with O_EXCL,
 * held for the few milliseconds of a read-check-write of status.json or lease.json, then
 * removed. It makes "check the lease, then write" one step, which is what fencing needs.
 *
 * Left out: long holds (ownership of a run is the lease, not this lock), fairness, and
 * network filesystems. A holder that died leaves its lock behind; a lock older than
 * `staleMs`, or whose holder process is gone, is broken by renaming it away (only one
 * breaker's rename succeeds).
 */
export interface DirectoryLockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

export async function withDirectoryLock<T>(lockPath: string, action: () => Promise<T>, options: DirectoryLockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = options.staleMs ?? 30_000;
  await mkdir(dirname(lockPath), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  let wait = 2;
  for (;;) {
    if (await tryCreate(lockPath)) break;
    await breakIfStale(lockPath, staleMs);
    if (Date.now() > deadline) {
      throw new A3rError("LOCK_TIMEOUT", `could not take the lock ${lockPath} within ${timeoutMs} ms`, {
        where: lockPath,
        hint: `another a3r process holds it; if none is running, delete ${lockPath}`,
      });
    }
    await sleep(wait + Math.random() * wait);
    wait = Math.min(wait * 2, 50);
  }
  try {
    return await action();
  } finally {
    await rm(lockPath, { force: true });
  }
}

async function holderIsGone(lockPath: string): Promise<boolean> {
  const text = await readFile(lockPath, "utf8").catch(() => "");
  const pid = Number(text.split(" ")[0]);
  return Number.isInteger(pid) && pid > 0 && isProcessGone(pid);
}

async function tryCreate(lockPath: string): Promise<boolean> {
  try {
    const handle = await open(lockPath, "wx");
    try {
      await handle.writeFile(`${process.pid} ${new Date().toISOString()}\n`);
    } catch (error) {
      // On a full disk the file is created but not written: an empty lock nobody holds
      // would stall every later writer until it is stale.
      await handle.close().catch(() => undefined);
      await rm(lockPath, { force: true }).catch(() => undefined);
      throw error;
    }
    await handle.close();
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

async function breakIfStale(lockPath: string, staleMs: number): Promise<void> {
  try {
    const info = await stat(lockPath);
    const age = Date.now() - info.mtimeMs;
    // A holder killed inside the lock (a worker killed with its leader): its pid, written
    // first thing, names no live process of this machine. Locks are between processes of
    // one machine, so that is as good as stale; a reused pid only makes it wait.
    if (age < staleMs && !(age > 1000 && (await holderIsGone(lockPath)))) return;
    const aside = `${lockPath}.stale-${randomBytes(4).toString("hex")}`;
    await rename(lockPath, aside);
    await rm(aside, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
