import { spawnSync } from "node:child_process";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isA3rError } from "../core/errors.ts";
import { withDirectoryLock } from "./directory-lock.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-lock-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("directory lock", () => {
  it("runs critical sections one at a time and removes the lock afterwards", async () => {
    const lock = join(dir, ".a3r.lock");
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withDirectoryLock(lock, async () => {
          inside += 1;
          most = Math.max(most, inside);
          await new Promise((resolve) => setTimeout(resolve, 2));
          inside -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(existsSync(lock)).toBe(false);
  });

  it("times out with LOCK_TIMEOUT naming the lock while a live holder keeps it", async () => {
    const lock = join(dir, ".a3r.lock");
    await writeFile(lock, `${process.pid} now\n`);
    const old = new Date(Date.now() - 5_000);
    await utimes(lock, old, old);
    try {
      await withDirectoryLock(lock, async () => undefined, { timeoutMs: 100, staleMs: 60_000 });
      expect.unreachable();
    } catch (error) {
      expect(isA3rError(error, "LOCK_TIMEOUT")).toBe(true);
      expect((error as { hint: string }).hint).toContain(lock);
    }
  });

  it("breaks at once a lock whose holder process of this machine is gone", async () => {
    const lock = join(dir, ".a3r.lock");
    const dead = spawnSync("true").pid!;
    await writeFile(lock, `${dead} a moment ago\n`);
    const old = new Date(Date.now() - 2_000);
    await utimes(lock, old, old);
    await expect(withDirectoryLock(lock, async () => "got it", { timeoutMs: 1_000, staleMs: 60_000 })).resolves.toBe("got it");
  });

  // A supervisor killed inside its critical section must not block the run forever.
  it("breaks a lock left behind by a dead holder once it is stale", async () => {
    const lock = join(dir, ".a3r.lock");
    await writeFile(lock, "12345 long ago\n");
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    await expect(withDirectoryLock(lock, async () => "got it", { timeoutMs: 1_000, staleMs: 30_000 })).resolves.toBe("got it");
  });
});
