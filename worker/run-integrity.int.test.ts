import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * What a run's own program does must not make the record untrue:
 * it writes the worker's files into its result directory, it "succeeds" without training,
 * or it leaves its process group with setsid before the budget kill. Real worker, real
 * trainer processes (worker/__fixtures__/trainer.mjs).
 */
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
const started: number[] = [];
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  // A failing case must not leave its escaped sleeper behind (only pids this file started).
  for (const pid of started) if (alive(pid)) process.kill(pid, "SIGKILL");
  await folder.cleanup();
});

/** Running: a zombie (ended, not yet reaped by whoever inherited it) is not. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function finished(resultDir: string, state: string) {
  const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
  expect(status.state).toBe(state);
  expect((await readFile(join(resultDir, "finish.flag"), "utf8")).trim()).toBe(state);
  expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  return { status, events: (await readEvents(join(resultDir, "events.jsonl"))).events, attempts: await readFile(join(resultDir, "attempts.md"), "utf8") };
}

describe("worker: what the run's program does to its record", () => {
  it("a trainer that writes finish.flag and a broken status.json is undone and reported; supervision goes on to the real end", async () => {
    const { path, resultDir } = await folder.write({ id: "foreign", command: "node trainer.mjs --steps 6 --step-ms 80 --foreign-writes-at 2" });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    expect(outcome).toMatchObject({ state: "succeeded", attempts: 1 });
    const run = await finished(resultDir, "succeeded");
    expect(run.status.step).toBe(6);
    const foreign = run.events.filter((event) => event.kind === "result-dir.foreign-write");
    expect(foreign).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: "status.json", action: "restored the worker's last status" }),
        expect.objectContaining({ file: "finish.flag", action: "removed it" }),
      ]),
    );
    expect(String(foreign.find((event) => event.file === "status.json")?.found)).toContain("invalid");
    expect(String(foreign.find((event) => event.file === "finish.flag")?.found)).toContain("while the run is running");
    // The program's own area is A3R_OUTPUT_DIR.
    expect(await readFile(join(resultDir, "output", "samples.txt"), "utf8")).toBe("samples at step 2\n");
  });

  it("a finish.flag a trainer wrote while no worker watched does not make the run look finished to the next worker", async () => {
    const gate = join(folder.dir, "orphan.gate");
    const { path, resultDir } = await folder.write({
      id: "orphan-flag",
      command: `node trainer.mjs --steps 4 --step-ms 50 --pause-after 2 --until-file ${gate}`,
      worker: { stall_timeout: "1m" },
    });
    const worker = spawn(process.execPath, [cli, "worker", "run", path, "--no-llm", "--quiet"], { stdio: "ignore" });
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 2);
    worker.kill("SIGKILL");
    await exited;
    await writeFile(join(resultDir, "finish.flag"), "succeeded\n");
    // The paused trainer goes on only once the next worker has re-attached to it: let go
    // sooner, it could finish before that worker looks, which would then start it afresh.
    const next = runWorker({ blueprintPath: path, progress: silentProgress });
    await until(async () => (await readEvents(join(resultDir, "events.jsonl"))).events.some((event) => event.kind === "worker.reattached"));
    await writeFile(gate, "");
    const outcome = await next;
    expect(outcome).toMatchObject({ state: "succeeded", alreadyFinished: false, reattached: true });
    const run = await finished(resultDir, "succeeded");
    expect(run.status.step).toBe(4);
    expect(run.events.find((event) => event.kind === "result-dir.foreign-write")).toMatchObject({ file: "finish.flag", action: "removed it" });
  });

  it("exit 0 with no step and no metric is failed, not succeeded, unless the blueprint says the run trains nothing", async () => {
    const silent = await folder.write({ id: "no-signal", command: "node trainer.mjs --no-signal" });
    const outcome = await runWorker({ blueprintPath: silent.path, progress: silentProgress });
    expect(outcome.state).toBe("failed");
    expect(outcome.reason).toContain("exited 0 without a training signal");
    const run = await finished(silent.resultDir, "failed");
    expect(run.status.attempt).toBe(1);
    expect(run.status.reason).toContain("exited 0 without a training signal");
    expect(run.attempts).toContain("require_training_signal: false");

    const allowed = await folder.write({ id: "no-signal-ok", command: "node trainer.mjs --no-signal", worker: { require_training_signal: false } });
    expect((await runWorker({ blueprintPath: allowed.path, progress: silentProgress })).state).toBe("succeeded");
    await finished(allowed.resultDir, "succeeded");
  });

  it("a blueprint the command policy refuses leaves a result directory in state refused, with the reason, and launches nothing", async () => {
    const { path, resultDir } = await folder.write({ id: "refused", command: "node trainer.mjs --steps 2 && rm -rf / --no-preserve-root" });
    await expect(runWorker({ blueprintPath: path, progress: silentProgress })).rejects.toThrow(/BLUEPRINT_INVALID|problem\(s\) in the blueprint/);
    const run = await finished(resultDir, "refused");
    expect(run.status.reason).toMatch(/^refused by the command policy: /);
    expect(run.events.map((event) => event.kind)).toEqual(["run.refused"]);
    expect(run.attempts).toContain("refused by the command policy, nothing launched");
    expect(await readFile(join(resultDir, "result.md"), "utf8")).toContain("- Outcome: **refused**");
    // Asked again, the worker says it is finished and still launches nothing.
    await expect(runWorker({ blueprintPath: path, progress: silentProgress })).rejects.toThrow();
    expect((await readEvents(join(resultDir, "events.jsonl"))).events).toHaveLength(1);
  });

  it("refuses a result directory that is a symlink, and one whose real path leaves the allowed roots; nothing is written there", async () => {
    const { path } = await folder.write({ id: "confined", command: "node trainer.mjs --steps 2" });
    const outside = join(folder.dir, "outside");
    await mkdir(outside, { recursive: true });
    const linked = join(folder.dir, "linked-result");
    await symlink(outside, linked);
    await expect(runWorker({ blueprintPath: path, resultDir: linked, progress: silentProgress })).rejects.toMatchObject({ code: "RESULT_DIR_UNSAFE" });
    const root = join(folder.dir, "root");
    await mkdir(root, { recursive: true });
    await symlink(outside, join(root, "escape"));
    await expect(runWorker({ blueprintPath: path, resultDir: join(root, "escape", "run"), allowedRoots: [root], progress: silentProgress })).rejects.toThrow(
      `really is ${join(outside, "run")}, outside the allowed roots`,
    );
    expect(await readdir(outside)).toEqual([]);
    // A real folder under the root runs as usual.
    const inside = await runWorker({ blueprintPath: path, resultDir: join(root, "run"), allowedRoots: [root], progress: silentProgress });
    expect(inside.state).toBe("succeeded");
  });

  it("a child that left the process group with setsid is found by the run's tag and stopped with the budget kill, and reported", async () => {
    const pidFile = join(folder.dir, "escape.pids");
    const { path, resultDir } = await folder.write({
      id: "escape",
      command: `node trainer.mjs --steps 1000 --step-ms 100 --escape 1 --pid-file ${pidFile}`,
      budget: "2s",
    });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("timed_out");
    const [, escaped] = (await readFile(pidFile, "utf8")).trim().split("\n").map(Number);
    started.push(escaped!);
    const run = await finished(resultDir, "timed_out");
    expect(alive(escaped!)).toBe(false);
    const report = run.events.find((event) => event.kind === "run.escaped-processes");
    expect(report).toMatchObject({ attempt: 1, processes: [expect.objectContaining({ pid: escaped, command: "sleep 300" })] });
  });
});
