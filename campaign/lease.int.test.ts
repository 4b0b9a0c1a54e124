import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { isA3rError } from "../core/errors.ts";
import { acquireLease, readLease, releaseLease, renewLease } from "./lease.ts";
import { ResultDirWriter } from "./result-dir-writer.ts";

const run = promisify(execFile);
const runTs = new URL("../bin/run-ts.js", import.meta.url).pathname;
const acquireProgram = new URL("./__fixtures__/programs/acquire-lease.ts", import.meta.url).pathname;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-lease-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

/** A clock the test moves by hand, so expiry is exact instead of a race with sleep. */
function manualClock(start = Date.parse("2026-11-29T10:00:00.000Z")) {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => (now += ms) };
}

describe("run lease", () => {
  it("refuses a second owner while the first holds a live lease", async () => {
    const first = await acquireLease(dir, "worker-a", 60_000);
    const error = await rejection(acquireLease(dir, "worker-b", 60_000));
    expect(isA3rError(error, "LEASE_HELD")).toBe(true);
    expect((error as Error).message).toContain("worker-a");
    expect((await readLease(dir))?.owner).toBe("worker-a");
    expect(first.token).toBe(1);
  });

  it("takes over at once from an owner of this machine whose process is gone, and waits for a live one", async () => {
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    await new Promise((resolveSpawn) => child.once("spawn", resolveSpawn));
    const living = `${hostname()}:${child.pid}`;
    await acquireLease(dir, living, 60_000);
    expect(isA3rError(await rejection(acquireLease(dir, "worker-b", 60_000)), "LEASE_HELD")).toBe(true);
    const exited = new Promise((resolveExit) => child.once("exit", resolveExit));
    child.kill("SIGKILL");
    await exited;
    const taken = await acquireLease(dir, "worker-b", 60_000);
    expect(taken.token).toBe(2);
    // Another machine's owner is judged by expiry alone: its pid means nothing here.
    await writeFile(
      join(dir, "lease.json"),
      JSON.stringify({
        owner: `elsewhere.example:${child.pid}`,
        token: 3,
        acquiredAt: new Date().toISOString(),
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      }),
    );
    expect(isA3rError(await rejection(acquireLease(dir, "worker-c", 60_000)), "LEASE_HELD")).toBe(true);
  });

  it("lets a new owner take over a stale lease and fences the old one's writes", async () => {
    const clock = manualClock();
    const old = await ResultDirWriter.open(dir, "worker-a", { ttlMs: 30_000, now: clock.now });
    await old.writeStatus({ state: "queued", host: "gpu-01" });
    await old.writeStatus({ state: "preparing" });

    clock.advance(29_000);
    expect(isA3rError(await rejection(acquireLease(dir, "worker-b", 30_000, { now: clock.now })), "LEASE_HELD")).toBe(true);

    clock.advance(2_000); // past expiry: worker-a went silent
    const next = await ResultDirWriter.open(dir, "worker-b", { ttlMs: 30_000, now: clock.now });
    expect(next.lease.token).toBe(old.lease.token + 1);

    // The old supervisor wakes up and tries to carry on: every kind of write is refused.
    for (const write of [
      () => old.writeStatus({ state: "running", pid: 99 }),
      () => old.heartbeat({ step: 5 }),
      () => old.appendMetrics({ step: 5, loss: 1 }),
      () => old.appendEvent("run.launched"),
      () => old.writeResult("# stale"),
      () => renewLease(old.lease, 30_000, { now: clock.now }),
    ]) {
      expect(isA3rError(await rejection(write()), "LEASE_LOST")).toBe(true);
    }
    const status = JSON.parse(await readFile(join(dir, "status.json"), "utf8")) as { state: string; pid: number | null };
    expect(status).toMatchObject({ state: "preparing", pid: null });

    await next.writeStatus({ state: "running", pid: 1234 });
    expect(await old.release()).toBe(false);
    expect((await readLease(dir))?.owner).toBe("worker-b");
  });

  it("keeps a lease alive through heartbeats", async () => {
    const clock = manualClock();
    const writer = await ResultDirWriter.open(dir, "worker-a", { ttlMs: 10_000, now: clock.now });
    await writer.writeStatus({ state: "queued" });
    for (let beat = 0; beat < 5; beat += 1) {
      clock.advance(8_000);
      await writer.heartbeat({ step: beat });
    }
    // 40 s after acquiring with a 10 s TTL: still owned thanks to renewal.
    expect(isA3rError(await rejection(acquireLease(dir, "worker-b", 10_000, { now: clock.now })), "LEASE_HELD")).toBe(true);
  });

  it("hands the run over at once after a release", async () => {
    const first = await acquireLease(dir, "worker-a", 60_000);
    expect(await releaseLease(first)).toBe(true);
    const second = await acquireLease(dir, "worker-b", 60_000);
    expect(second.token).toBe(2);
  });

  // A restarted supervisor with the same owner name re-attaches; its old handle must not write.
  it("re-acquiring by the same owner bumps the token and fences the earlier handle", async () => {
    const before = await acquireLease(dir, "gpu-01:worker", 60_000);
    const after = await acquireLease(dir, "gpu-01:worker", 60_000);
    expect(after.token).toBe(before.token + 1);
    expect(isA3rError(await rejection(renewLease(before, 60_000)), "LEASE_LOST")).toBe(true);
    await expect(renewLease(after, 60_000)).resolves.toMatchObject({ token: after.token });
  });

  it("gives the lease to exactly one of several processes racing for it", async () => {
    const startFile = join(dir, "go");
    const racers = ["p1", "p2", "p3", "p4", "p5"].map((owner) => run(process.execPath, [runTs, acquireProgram, dir, owner, startFile]));
    await new Promise((resolve) => setTimeout(resolve, 1500)); // let them all load and wait
    await writeFile(startFile, "go\n");
    const results = (await Promise.all(racers)).map(({ stdout }) => JSON.parse(stdout.trim()) as { owner: string; acquired: boolean });
    const winners = results.filter((result) => result.acquired);
    expect(results).toHaveLength(5);
    expect(winners).toHaveLength(1);
    expect((await readLease(dir))?.owner).toBe(winners[0]!.owner);
  });
});
