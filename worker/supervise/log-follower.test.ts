import { afterEach, describe, expect, it } from "vitest";
import { appendFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LogFollower } from "./log-follower.ts";

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
});
