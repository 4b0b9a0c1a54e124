import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isGroupAlive, launchProcessGroup, readExitStatus, signalGroup, terminateGroup } from "./process-group.ts";

let folder: string;
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function start(command: string) {
  folder = await mkdtemp(join(tmpdir(), "a3r-group-"));
  const logFile = join(folder, "attempt-1.log");
  const exitFile = join(folder, "attempt-1.exit");
  const launched = await launchProcessGroup({ command, cwd: folder, env: process.env, logFile, exitFile });
  return { ...launched, logFile, exitFile };
}

describe("launchProcessGroup", () => {
  it("runs the command detached, logs its output and records its exit code", async () => {
    const run = await start("echo hello; echo oops >&2; exit 3");
    await until(() => !isGroupAlive(run.pgid));
    expect(await readFile(run.logFile, "utf8")).toBe("hello\noops\n");
    expect(await readExitStatus(run.exitFile)).toEqual({ exitCode: 3, signal: null });
  });

  it("reports a signal death of the command", async () => {
    const run = await start("sleep 30");
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Kill only the command (the child of the wrapper), as the OOM killer would.
    const { execFileSync } = await import("node:child_process");
    const children = execFileSync("pgrep", ["-g", String(run.pgid), "sleep"])
      .toString()
      .trim()
      .split("\n");
    for (const pid of children) process.kill(Number(pid), "SIGKILL");
    await until(() => !isGroupAlive(run.pgid));
    expect(await readExitStatus(run.exitFile)).toEqual({ exitCode: 137, signal: "SIGKILL" });
  });

  it("terminates the whole group, grandchildren included, leaving no orphans", async () => {
    const run = await start("(trap '' TERM; sleep 60) & (sleep 60) & wait");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(isGroupAlive(run.pgid)).toBe(true);
    expect(await terminateGroup(run.pgid, 500)).toBe("killed");
    expect(isGroupAlive(run.pgid)).toBe(false);
  });

  it("treats a group killed as a whole as an unknown end, never a guessed SIGKILL (no exit file written)", async () => {
    const run = await start("sleep 60");
    await new Promise((resolve) => setTimeout(resolve, 200));
    signalGroup(run.pgid, "SIGKILL");
    await until(() => !isGroupAlive(run.pgid));
    expect(await readExitStatus(run.exitFile)).toMatchObject({
      exitCode: null,
      signal: null,
      groupKilled: true,
      unknown: expect.stringContaining("no exit file"),
    });
  });
});

describe("readExitStatus", () => {
  it("never reads an empty exit file as a clean exit", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-group-"));
    const exitFile = join(folder, "attempt-1.exit");
    const { writeFile } = await import("node:fs/promises");
    await writeFile(exitFile, "");
    expect(await readExitStatus(exitFile)).toMatchObject({ exitCode: null, signal: null, unknown: expect.stringContaining("no exit code") });
  });

  it("writes the exit file whole: it exists only once the code is in it", async () => {
    const run = await start("exit 3");
    await until(async () => {
      const { access } = await import("node:fs/promises");
      return access(run.exitFile).then(
        () => true,
        () => false,
      );
    });
    expect(await readExitStatus(run.exitFile)).toEqual({ exitCode: 3, signal: null });
  });
});

describe("terminateGroup and the exit record", () => {
  it("records the command's own exit after a TERM it handles (a trainer saving on TERM keeps its result)", async () => {
    const run = await start(`trap 'echo saved; exit 7' TERM; while true; do sleep 0.1; done`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await terminateGroup(run.pgid, 3000)).toBe("terminated");
    expect(await readExitStatus(run.exitFile)).toEqual({ exitCode: 7, signal: null });
    expect(await readFile(run.logFile, "utf8")).toContain("saved");
  });
});

describe("a group of zombies", () => {
  it("is not alive: a member that ended unreaped (its parent gone, an init that does not reap) does not hold a stop for the grace period", async () => {
    // The background sleep's parent (the exec'd sleep) dies on TERM with it: where init does
    // not reap orphans it stays a zombie of the group. TERM ends everything: "terminated", never "killed".
    const run = await start("sleep 60 & exec sleep 61");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(isGroupAlive(run.pgid)).toBe(true);
    expect(await terminateGroup(run.pgid, 30_000)).toBe("terminated");
    expect(isGroupAlive(run.pgid)).toBe(false);
  });
});
