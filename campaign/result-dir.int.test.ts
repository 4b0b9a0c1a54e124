import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { appendFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isA3rError } from "../core/errors.ts";
import { ResultDirWriter } from "./result-dir-writer.ts";
import { readResultDir } from "./result-dir-reader.ts";

const readerProgram = new URL("./__fixtures__/programs/read-status-loop.mjs", import.meta.url).pathname;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-result-"));
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

const open = () => ResultDirWriter.open(dir, "worker-test", { ttlMs: 60_000 });

describe("result directory writer", () => {
  it("records a whole run that the reader gives back parsed", async () => {
    const run = await open();
    await run.writeBlueprint("# Experiment Blueprint: s1\n");
    await run.writeStatus({ state: "queued", host: "gpu-01" });
    await run.writeStatus({ state: "preparing" });
    await run.writeStatus({ state: "running", attempt: 1, pid: 4242, pgid: 4242, startedAt: new Date().toISOString() });
    await run.appendEvent("run.launched", { attempt: 1, log: "logs/attempt-1.log" });
    await run.appendMetrics({ step: 10, reward_mean: 0.4, loss: Number.NaN });
    await run.appendMetrics({ step: 20, reward_mean: 0.5 });
    await run.heartbeat({ step: 20, lastMetrics: { reward_mean: 0.5 } });
    await run.appendAttempt({ attempt: 1, title: "launched as written", body: "first signal after 2 min" });
    await run.writeStatus({ state: "succeeded" });
    await run.writeResult("# Result\n\nconfirmed\n");
    expect(await run.finish()).toBe("succeeded");

    const snapshot = await readResultDir(dir);
    expect(snapshot.problems).toEqual([]);
    expect(snapshot.status).toMatchObject({
      state: "succeeded",
      attempt: 1,
      host: "gpu-01",
      pid: 4242,
      step: 20,
      lastMetrics: { reward_mean: 0.5 },
      reason: null,
    });
    expect(snapshot.status?.heartbeatAt).not.toBeNull();
    expect(snapshot.finishFlag?.state).toBe("succeeded");
    expect(snapshot.metrics.records.map((record) => record.step)).toEqual([10, 20]);
    expect(snapshot.metrics.records[0]?.loss).toBeNaN(); // NaN is kept as NaN (written as Python writes it), a NaN loss stays one
    expect(snapshot.events.events.map((event) => event.kind)).toEqual(["run.launched"]);
    expect(snapshot.present).toMatchObject({ blueprint: true, status: true, attempts: true, result: true, finishFlag: true, curves: false });
    expect(await readFile(join(dir, "attempts.md"), "utf8")).toContain("## Attempt 1: launched as written");
    expect(await readFile(join(dir, "finish.flag"), "utf8")).toBe("succeeded\n");
  });

  it("refuses illegal transitions and leaves status.json as it was", async () => {
    const run = await open();
    expect(isA3rError(await rejection(run.writeStatus({ state: "running" })), "STATUS_TRANSITION_ILLEGAL")).toBe(true);
    expect(existsSync(join(dir, "status.json"))).toBe(false);
    await run.writeStatus({ state: "queued" });
    const error = await rejection(run.writeStatus({ state: "succeeded" }));
    expect(isA3rError(error, "STATUS_TRANSITION_ILLEGAL")).toBe(true);
    expect((error as Error).message).toContain("queued -> succeeded");
    expect((await readResultDir(dir)).status?.state).toBe("queued");
    // Same-state updates are not transitions.
    await run.writeStatus({ host: "gpu-02" });
    expect((await readResultDir(dir)).status).toMatchObject({ state: "queued", host: "gpu-02" });
  });

  it("writes finish.flag only for a terminal status, and nothing after it", async () => {
    const run = await open();
    await run.writeStatus({ state: "queued" });
    await run.writeStatus({ state: "preparing" });
    expect(isA3rError(await rejection(run.finish()), "RUN_NOT_FINISHED")).toBe(true);
    expect(existsSync(join(dir, "finish.flag"))).toBe(false);
    await run.writeStatus({ state: "failed", reason: "interpreter missing" });
    expect(await run.finish()).toBe("failed");
    expect(isA3rError(await rejection(run.heartbeat({ step: 1 })), "STATUS_TRANSITION_ILLEGAL")).toBe(true);
  });

  it("lists problems instead of throwing on broken files", async () => {
    await writeFile(join(dir, "status.json"), '{ "state": "flying", "attempt": 1 }\n');
    await writeFile(join(dir, "finish.flag"), "done\n");
    await writeFile(
      join(dir, "metrics.jsonl"),
      '{"step":1,"time":"2026-11-29T10:00:00.000Z","loss":1}\nnot json\n{"step":"two","time":"2026-11-29T10:00:00.000Z"}\n{"step":3,"ti',
    );
    await appendFile(join(dir, "events.jsonl"), '{"kind":"no.time"}\n');
    const snapshot = await readResultDir(dir);
    expect(snapshot.status).toBeUndefined();
    expect(snapshot.finishFlag).toMatchObject({ text: "done", state: undefined });
    const byCode = (code: string) => snapshot.problems.filter((problem) => problem.code === code);
    expect(byCode("STATUS_INVALID").length).toBeGreaterThan(0);
    expect(byCode("STATUS_INVALID")[0]?.message).toContain("state");
    expect(byCode("FINISH_FLAG_INVALID")).toHaveLength(1);
    expect(byCode("LINE_NOT_JSON")[0]?.line).toBe(2);
    expect(byCode("METRICS_RECORD_INVALID")[0]?.line).toBe(3);
    expect(byCode("LINE_TORN")[0]).toMatchObject({ line: 4, torn: true });
    expect(byCode("EVENT_INVALID")[0]?.line).toBe(1);
    expect(snapshot.metrics.records).toHaveLength(1);
  });

  // A reader (the leader, an audit, a re-attaching worker) must never see half a status.json.
  it("never shows a torn status.json to a reader in another process during 200 writes", async () => {
    const run = await open();
    await run.writeStatus({ state: "queued" });
    await run.writeStatus({ state: "preparing" });
    await run.writeStatus({ state: "running", attempt: 1 });
    const stopFile = join(dir, "stop");
    const readyFile = join(dir, "ready");
    const reader = spawn(process.execPath, [readerProgram, join(dir, "status.json"), stopFile, readyFile], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    reader.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => reader.on("exit", resolve));
    while (!existsSync(readyFile)) await sleep(5);
    // 200 writes: enough for hundreds of reads across many steps (checked below) while the
    // reader, a busy loop in its own process, holds a core.
    for (let step = 0; step < 200; step += 1) {
      // Big enough that a non-atomic write would be caught half-way.
      const lastMetrics = Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`metric_${index}`, step + index / 100]));
      await run.heartbeat({ step, lastMetrics });
    }
    await writeFile(stopFile, "stop\n");
    expect(await exited).toBe(0);
    const report = JSON.parse(output) as { reads: number; torn: number; missing: number; distinctSteps: number };
    expect(report.torn).toBe(0);
    expect(report.missing).toBe(0);
    expect(report.reads).toBeGreaterThan(100);
    expect(report.distinctSteps).toBeGreaterThan(10);
  });

  it("undoes a foreign line that lands between its own check and its own append (the writer remembers the bytes it wrote, not what the file grew by)", async () => {
    const metrics = join(dir, "metrics.jsonl");
    let forgeNext = false;
    // `now` is read after the writer's check and before its append: the tightest race a
    // training program writing into its result directory can win.
    const run = await ResultDirWriter.open(dir, "worker-test", {
      ttlMs: 60_000,
      now: () => {
        if (forgeNext) {
          forgeNext = false;
          appendFileSync(metrics, `${JSON.stringify({ step: 999, time: new Date().toISOString(), reward_mean: 0.99 })}\n`);
        }
        return new Date();
      },
    });
    await run.appendMetrics({ step: 1, reward_mean: 0.1 });
    forgeNext = true;
    await run.appendMetrics({ step: 2, reward_mean: 0.2 });
    const undone = await run.guardOwnedFiles();
    expect(undone.map((write) => write.file)).toEqual(["metrics.jsonl"]);
    const steps = (await readFile(metrics, "utf8"))
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as { step: number }).step);
    expect(steps).toEqual([1, 2]);
    expect(await run.guardOwnedFiles()).toEqual([]);
  });
});
