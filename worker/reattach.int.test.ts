import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { access, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * The worker itself dies (SIGKILL, as a crashed host agent would) while its run goes on in
 * its own process group. A worker started again must find the live run through status.json
 * and the expired lease, supervise it to the end, and never launch it a second time.
 */
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

function startWorker(blueprint: string): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [cli, "worker", "run", blueprint, "--json", "--no-llm"], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("worker re-attach", () => {
  it("a worker killed mid-run is replaced by one that re-attaches; the run is launched exactly once", async () => {
    const pidFile = join(folder.dir, "reattach.pids");
    const gate = join(folder.dir, "reattach.gate");
    // The trainer pauses after step 5 until the test opens the gate, so the run is certainly
    // alive when the second worker arrives, however slow the machine.
    const { path, resultDir } = await folder.write({
      id: "reattach",
      command: `node trainer.mjs --steps 10 --step-ms 50 --pause-after 5 --until-file ${gate} --pid-file ${pidFile}`,
      worker: { stall_timeout: "2m" },
    });
    const first = startWorker(path);
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 5);
    first.child.kill("SIGKILL");
    await first.done;
    const before = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(before.state).toBe("running");
    // As if the worker had died inside the directory lock: the next one must break it.
    await writeFile(join(resultDir, ".a3r.lock"), "999999 2026-11-29T00:00:00.000Z\n");

    const second = startWorker(path);
    await until(async () => (await readEvents(join(resultDir, "events.jsonl"))).events.some((event) => event.kind === "worker.reattached"));
    await writeFile(gate, "open");
    const result = await second.done;
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ state: "succeeded", reattached: true, attempts: 1 });
    expect((await readFile(pidFile, "utf8")).trim().split("\n")).toHaveLength(1);

    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    expect(events.find((event) => event.kind === "worker.reattached")).toMatchObject({ attempt: 1, pid: before.pid });
    const steps = (await readMetrics(join(resultDir, "metrics.jsonl"))).records.map((record) => record.step);
    expect(steps).toEqual(Array.from({ length: 10 }, (_, index) => index + 1));
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);

    // A third worker finds finish.flag and does nothing.
    const third = await startWorker(path).done;
    expect(JSON.parse(third.stdout.trim())).toMatchObject({ state: "succeeded", alreadyFinished: true });
    expect((await readFile(pidFile, "utf8")).trim().split("\n")).toHaveLength(1);
  });

  it("a run that ended while no worker watched is judged from its exit file, not launched again", async () => {
    const pidFile = join(folder.dir, "ended.pids");
    const gate = join(folder.dir, "ended.gate");
    const { path, resultDir } = await folder.write({
      id: "ended-unwatched",
      command: `node trainer.mjs --steps 8 --step-ms 50 --pause-after 2 --until-file ${gate} --pid-file ${pidFile}`,
      worker: { stall_timeout: "2m" },
    });
    const first = startWorker(path);
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 2);
    first.child.kill("SIGKILL");
    await first.done;
    await writeFile(gate, "open");
    await until(async () =>
      access(join(resultDir, "logs", "attempt-1.exit")).then(
        () => true,
        () => false,
      ),
    );

    const second = await startWorker(path).done;
    expect(JSON.parse(second.stdout.trim())).toMatchObject({ state: "succeeded", attempts: 1 });
    expect((await readFile(pidFile, "utf8")).trim().split("\n")).toHaveLength(1);
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.some((event) => event.kind === "worker.found-ended")).toBe(true);
    // The log lines written while nobody watched are still recorded, once each.
    expect((await readMetrics(join(resultDir, "metrics.jsonl"))).records.map((record) => record.step)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // ...and marked: their time is when the second worker read them, not when the run made them.
    const late = events.find((event) => event.kind === "metrics.recorded-late");
    expect(late).toMatchObject({ attempt: 1, fromStep: 3, toStep: 8, count: 6 });
    expect(typeof late?.unwatchedSince).toBe("string");
  });
});
