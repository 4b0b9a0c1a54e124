import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import { isProcessGone } from "../core/process-group.ts";
import { writeJsonAtomic } from "../core/atomic-file.ts";
import { withDirectoryLock, type DirectoryLockOptions } from "./directory-lock.ts";
import { resultDirPaths } from "./result-dir-paths.ts";
import { describeIssues } from "./jsonl-file.ts";

/**
 * Who owns a run: `lease.json` in the result directory, `{owner, token, acquiredAt,
 * expiresAt, releasedAt?}`. Two supervisors can never both own a run:
 *
 * 1. acquire succeeds only when there is no lease, it was released, it has expired, or
 *    the same owner asks again; every acquire increases `token` (the fencing token).
 * 2. every write to the run (status, finish.flag, records) checks, under the directory
 *    lock, that lease.json still carries the writer's owner and token; otherwise
 *    LEASE_LOST. A supervisor that was paused past its expiry may keep writing as long as
 *    nobody took the lease over; once someone did, its token is stale and it is fenced.
 * 3. the owner renews before `expiresAt` (heartbeats do), and releases when it is done.
 *
 * Left out: clocks. Expiry compares wall-clock times written by different processes, so
 * all supervisors of one run must share a machine or a synchronized clock, and the TTL
 * must be much longer than the heartbeat interval.
 */
export const leaseSchema = z.strictObject({
  owner: z.string().min(1),
  token: z.number().int().positive(),
  acquiredAt: z.iso.datetime({ offset: true }),
  expiresAt: z.iso.datetime({ offset: true }),
  releasedAt: z.iso.datetime({ offset: true }).optional(),
});

export type Lease = z.infer<typeof leaseSchema>;

/** What an owner keeps in memory and passes to every write. */
export interface LeaseHandle {
  dir: string;
  owner: string;
  token: number;
}

export interface LeaseOptions extends DirectoryLockOptions {
  /** The clock, for tests. */
  now?: () => Date;
}

export async function readLease(dir: string): Promise<Lease | undefined> {
  const path = resultDirPaths(dir).lease;
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw leaseFileInvalid(path, "it is not valid JSON");
  }
  const checked = leaseSchema.safeParse(value);
  if (!checked.success) throw leaseFileInvalid(path, describeIssues(checked.error.issues));
  return checked.data;
}

function leaseFileInvalid(path: string, why: string): A3rError {
  return new A3rError("SCHEMA_INVALID", `lease file is invalid: ${why}`, {
    where: path,
    hint: "lease.json is written only by a3r; if no supervisor is running, delete it and acquire again",
  });
}

export function isLeaseLive(lease: Lease | undefined, now: Date): lease is Lease {
  return lease !== undefined && lease.releasedAt === undefined && Date.parse(lease.expiresAt) > now.getTime();
}

export function holdsLease(lease: Lease | undefined, handle: LeaseHandle): boolean {
  return lease !== undefined && lease.releasedAt === undefined && lease.owner === handle.owner && lease.token === handle.token;
}

/**
 * A lease whose owner is `host:pid` of this machine and whose process no longer exists is
 * as good as expired: a worker killed with its leader should not keep its run unwatched
 * for two TTLs. A pid reused by another process reads as alive, so the error is only ever
 * to wait (the safe direction); owners of other machines are judged by expiry alone.
 */
function ownerIsGoneHere(owner: string): boolean {
  const colon = owner.lastIndexOf(":");
  const pid = Number(owner.slice(colon + 1));
  if (colon <= 0 || owner.slice(0, colon) !== hostname() || !Number.isInteger(pid) || pid <= 0) return false;
  // A killed worker whose parent died too may linger as a zombie until init reaps it: gone.
  return isProcessGone(pid);
}

/** Takes the run; throws LEASE_HELD when another owner holds a live lease. */
export async function acquireLease(dir: string, owner: string, ttlMs: number, options: LeaseOptions = {}): Promise<LeaseHandle> {
  if (!(ttlMs > 0)) throw new RangeError(`lease ttlMs must be positive, got ${ttlMs}`);
  const now = options.now ?? (() => new Date());
  const paths = resultDirPaths(dir);
  return withDirectoryLock(
    paths.lock,
    async () => {
      const current = await readLease(dir);
      const at = now();
      if (isLeaseLive(current, at) && current.owner !== owner && !ownerIsGoneHere(current.owner)) {
        throw new A3rError("LEASE_HELD", `run ${dir} is owned by ${current.owner} until ${current.expiresAt}`, {
          where: paths.lease,
          hint: "another supervisor owns this run; re-attach from that one, or wait until its lease expires",
          details: { owner: current.owner, expiresAt: current.expiresAt },
        });
      }
      const lease: Lease = {
        owner,
        token: (current?.token ?? 0) + 1,
        acquiredAt: at.toISOString(),
        expiresAt: new Date(at.getTime() + ttlMs).toISOString(),
      };
      await writeJsonAtomic(paths.lease, lease);
      return { dir, owner, token: lease.token };
    },
    options,
  );
}

/** Runs `action` under the directory lock after checking that `handle` still owns the run. */
export async function withLease<T>(handle: LeaseHandle, action: (lease: Lease) => Promise<T>, options: DirectoryLockOptions = {}): Promise<T> {
  return withDirectoryLock(
    resultDirPaths(handle.dir).lock,
    async () => {
      const current = await readLease(handle.dir);
      if (!holdsLease(current, handle)) throw leaseLost(handle, current);
      return action(current as Lease);
    },
    options,
  );
}

/** Moves the expiry forward; throws LEASE_LOST when someone took the run over. */
export async function renewLease(handle: LeaseHandle, ttlMs: number, options: LeaseOptions = {}): Promise<Lease> {
  const now = options.now ?? (() => new Date());
  return withLease(handle, (lease) => writeRenewedLease(handle.dir, lease, ttlMs, now()), options);
}

/** For callers already inside `withLease` (a heartbeat renews in the same locked step). */
export async function writeRenewedLease(dir: string, lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
  const renewed: Lease = { ...lease, expiresAt: new Date(now.getTime() + ttlMs).toISOString() };
  await writeJsonAtomic(resultDirPaths(dir).lease, renewed);
  return renewed;
}

/** Gives the run up; returns false when the lease was no longer ours (nothing to release). */
export async function releaseLease(handle: LeaseHandle, options: LeaseOptions = {}): Promise<boolean> {
  const now = options.now ?? (() => new Date());
  return withDirectoryLock(
    resultDirPaths(handle.dir).lock,
    async () => {
      const current = await readLease(handle.dir);
      if (!holdsLease(current, handle)) return false;
      const at = now().toISOString();
      await writeJsonAtomic(resultDirPaths(handle.dir).lease, { ...current, releasedAt: at, expiresAt: at });
      return true;
    },
    options,
  );
}

function leaseLost(handle: LeaseHandle, current: Lease | undefined): A3rError {
  const holder =
    current === undefined
      ? "nobody (lease.json is missing)"
      : current.releasedAt
        ? `nobody (released at ${current.releasedAt})`
        : `${current.owner} with token ${current.token}`;
  return new A3rError("LEASE_LOST", `${handle.owner} (token ${handle.token}) no longer owns run ${handle.dir}; it is held by ${holder}`, {
    where: resultDirPaths(handle.dir).lease,
    hint: "this supervisor was fenced off: stop writing to the run and exit; the current owner carries on",
    details: { owner: handle.owner, token: handle.token, holder: current?.owner, holderToken: current?.token },
  });
}
