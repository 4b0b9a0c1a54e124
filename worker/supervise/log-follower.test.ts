import { afterEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { classifyFailure } from "../rules/failure-classifier.ts";
import { LogFollower, readLogTail } from "./log-follower.ts";

let folder: string;
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("LogFollower", () => {
  it("returns complete lines only, in order, across polls", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    const follower = new LogFollower(path);
    expect(await follower.poll()).toEqual([]);
    await writeFile(path, "one\ntw");
    expect(await follower.poll()).toEqual(["one"]);
    await appendFile(path, "o\nthree\n");
    expect(await follower.poll()).toEqual(["two", "three"]);
    expect(follower.recentText()).toBe("one\ntwo\nthree");
  });

  it("resumes from a saved offset without rereading", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    await writeFile(path, "a\nb\n");
    const first = new LogFollower(path);
    await first.poll();
    await appendFile(path, "c\n");
    expect(await new LogFollower(path, { offset: first.position }).poll()).toEqual(["c"]);
  });

  it("keeps a bounded tail and starts over when the file is truncated", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    const follower = new LogFollower(path, { tailLines: 2 });
    await writeFile(path, "1\n2\n3\n");
    await follower.poll();
    expect(follower.recentText()).toBe("2\n3");
    await writeFile(path, "new\n");
    expect(await follower.poll()).toEqual(["new"]);
  });

  it("reads to the end of the file in one poll, far past a megabyte, and a budget leaves the rest for the next", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    const lines = Array.from({ length: 60_000 }, (_, index) => `line ${index} ${"-".repeat(40)}`);
    await writeFile(path, `${lines.join("\n")}\n`);
    expect((await new LogFollower(path).poll()).length).toBe(60_000);
    const budgeted = new LogFollower(path);
    const first = await budgeted.poll({ maxBytes: 1 << 20, maxMs: 10_000 });
    expect(budgeted.behind).toBe(true);
    const rest = await budgeted.poll();
    expect(budgeted.behind).toBe(false);
    expect([...first, ...rest]).toEqual(lines);
  });

  it("gives the unterminated last line at finish, and a tail bounded in lines and bytes", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    await writeFile(path, `${"x".repeat(300_000)}\nerror one\r\nlast words`);
    const follower = new LogFollower(path, { tailBytes: 1024, tailLines: 3 });
    expect(await follower.poll()).toHaveLength(2);
    const ended: string[] = [];
    follower.finish((line) => ended.push(line));
    expect(ended).toEqual(["last words"]);
    expect(follower.recentText().split("\n").slice(1)).toEqual(["error one", "last words"]);
    expect(follower.recentText().length).toBeLessThan(1100);
  });

  it("caps the file it has read: head, a marker with the bytes cut, the newest output; nothing unread is lost", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    const cap = 256 * 1024;
    const follower = new LogFollower(path, { capBytes: cap, capLabel: "256KiB" });
    let seen = 0;
    let written = 0;
    for (let round = 0; round < 8; round += 1) {
      const chunk = Array.from({ length: 5000 }, (_, index) => `round ${round} line ${index} ${"=".repeat(80)}`).join("\n");
      await appendFile(path, `${chunk}\n`);
      written += 5000;
      await follower.read(() => (seen += 1));
    }
    await appendFile(path, "the newest line\n");
    await follower.read(() => (seen += 1));
    expect(seen).toBe(written + 1);
    const text = await readFile(path, "utf8");
    expect(text.startsWith("round 0 line 0 ")).toBe(true);
    expect(text.trimEnd().endsWith("the newest line")).toBe(true);
    expect(text).toMatch(/\[a3r\] log capped \(worker\.log_cap = 256KiB\): \d+ bytes of output were cut here/);
    const { blocks, size } = await stat(path);
    // collapse (ext4, xfs): the file shrinks; punch (tmpfs): its blocks are freed.
    expect(Math.min(size, blocks * 512)).toBeLessThanOrEqual(cap + (1 << 20));
    expect(follower.cap?.cuts).toBeGreaterThan(0);
    expect(follower.cap?.droppedBytes).toBeGreaterThan(3 * cap);
  });

  it("keeps an OOM in the classifier's tail after a 3 MB burst before it and 260 traceback lines after it", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    const burst = "debug: grad stats mean=0.00012 std=0.98 (layer 17)\n".repeat(60_000);
    const traceback = Array.from({ length: 260 }, (_, index) => `[rank${index % 7}]:   File "/opt/train/fsdp_workers.py", line ${index}, in update_actor`);
    await writeFile(path, `${burst}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n${traceback.join("\n")}\n`);
    const follower = new LogFollower(path);
    await follower.read(() => {});
    for (const logTail of [follower.recentText(), await readLogTail(path)]) {
      expect(logTail.length).toBeLessThanOrEqual(256 * 1024);
      expect(classifyFailure({ logTail, exitCode: 1, signal: null })).toMatchObject({ failureClass: "out_of_memory", ruleId: "cuda-oom" });
    }
  });

  it("cuts unread output too when the writer outruns the reader by more than twice the cap, and reads on from the newest", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-follow-"));
    const path = join(folder, "run.log");
    const cap = 256 * 1024;
    await writeFile(path, `${"flood line of a fast writer\n".repeat(60_000)}the newest line\n`);
    const follower = new LogFollower(path, { capBytes: cap });
    const seen: string[] = [];
    await follower.read((line) => seen.push(line), { maxBytes: 1, maxMs: 10_000 });
    expect(follower.cap?.unreadBytes).toBeGreaterThan(cap);
    const { blocks, size } = await stat(path);
    expect(Math.min(size, blocks * 512)).toBeLessThanOrEqual(cap + (1 << 20));
    while (seen.at(-1) !== "the newest line") await follower.read((line) => seen.push(line));
    expect(seen.length).toBeLessThan(60_000);
  });

  it.skipIf(!existsSync("/dev/shm"))(
    "on tmpfs (no collapse) punches the read middle, then writes the log again without its hole once the attempt ended",
    async () => {
      folder = await mkdtemp(join("/dev/shm", "a3r-follow-"));
      const path = join(folder, "run.log");
      const cap = 256 * 1024;
      const follower = new LogFollower(path, { capBytes: cap, capLabel: "256KiB" });
      let seen = 0;
      for (let round = 0; round < 4; round += 1) {
        await appendFile(path, `${Array.from({ length: 5000 }, (_, index) => `round ${round} line ${index} ${"=".repeat(80)}`).join("\n")}\n`);
        await follower.read(() => (seen += 1));
      }
      expect(seen).toBe(20_000);
      expect(follower.cap?.method).toBe("punch");
      expect((await stat(path)).blocks * 512).toBeLessThanOrEqual(cap + (1 << 20));
      await follower.compact();
      const text = await readFile(path, "utf8");
      expect(text.length).toBeLessThanOrEqual(cap + 4096);
      expect(text).not.toContain("\u0000");
      expect(text).toMatch(/^round 0 line 0 [^]*\[a3r\] log capped [^]*round 3 line 4999 =+\n$/);
      await appendFile(path, "after\n");
      expect(await follower.poll()).toEqual(["after"]);
    },
  );
});
