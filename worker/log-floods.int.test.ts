import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * Output that is hostile to a log reader, through the real worker and a real child process
 * (worker/__fixtures__/noisy-trainer.mjs): floods, lines without a newline, binary bytes,
 * progress bars, a dump in the middle of a healthy run, a log that passes its cap. Each run
 * must end with the true last step, its values and the true state, and a result directory
 * the audit accepts. Sizes are small (tens of MB) but each is far beyond what one read of
 * the old reader took (1 MiB per poll).
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

const reward = (step: number) => Math.min(1, 0.3 + step * 0.05);
const range = (count: number) => Array.from({ length: count }, (_, index) => index + 1);

async function run(id: string, args: string, options: { worker?: Record<string, unknown>; config?: string } = {}) {
  const { path, resultDir } = await folder.write({ id, command: `node noisy-trainer.mjs ${args}`, worker: options.worker, config: options.config });
  const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: process.env });
  const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
  const metrics = (await readMetrics(join(resultDir, "metrics.jsonl"))).records;
  const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
  const errors = (await auditResultDir(resultDir)).filter((finding) => finding.severity === "error");
  expect(errors).toEqual([]);
  return { outcome, status, metrics, events, resultDir };
}

/** Every step 1..last recorded once, with the trainer's values, and the status says the last one. */
function expectTrueSteps(result: Awaited<ReturnType<typeof run>>, last: number) {
  expect(result.metrics.map((record) => record.step)).toEqual(range(last));
  const final = result.metrics[result.metrics.length - 1]!;
  expect(final.reward_mean).toBeCloseTo(reward(last), 4);
  expect(final.loss).toBeCloseTo(1 / (last + 1), 4);
  expect(result.status.step).toBe(last);
}

describe("the worker's log reader under hostile output", () => {
  it("a 40 MB flood after step 2, then steps 3-10: every step is recorded", async () => {
    const result = await run("flood", "--steps 10 --flood-after 2 --flood-mb 40");
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 10);
  });

  // The slow tier repeats covered paths at more cost: a steady stream, garbage bytes, a \r-only flood.
  it.skipIf(!slowTests)(`a trainer writing megabytes a second (200 KB of debug lines before each of 40 steps): 40 of 40${slowTierNote}`, async () => {
    const result = await run("noise", "--steps 40 --step-ms 10 --noise-kb 200");
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 40);
  });

  it("a 2 MB line without a newline before each step: each step is read from the end of its cut line, and the cut is reported", async () => {
    const result = await run("long-lines", "--steps 10 --long-line-mb 2");
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 10);
    expect(result.events.find((event) => event.kind === "log.long-line")).toMatchObject({ attempt: 1, log: "main" });
    expect(result.events.find((event) => event.kind === "log.summary")).toMatchObject({ longLines: 10 });
  });

  it.skipIf(!slowTests)(`5 MB of binary garbage after step 1: steps 2-10 are still read${slowTierNote}`, async () => {
    const result = await run("garbage", "--steps 10 --garbage-mb 5");
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 10);
  });

  it("a tqdm progress bar on stderr in front of each step line (`…it/s]step:N - …`): every step, not 'without a training signal'", async () => {
    const result = await run("tqdm", "--steps 10 --tqdm");
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 10);
    expect(await readFile(join(result.resultDir, "logs", "attempt-1.log"), "utf8")).toMatch(/9\.52it\/s\]step:3 - /);
  });

  it.skipIf(!slowTests)(`30 MB of \`\\r\` and nothing else after step 1: steps 2-10 are read (empty lines cost no memory)${slowTierNote}`, async () => {
    const result = await run("carriage-returns", "--steps 10 --cr-mb 30");
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 10);
  });

  it("a 60 MB dump in a healthy run with a 1.5 s stall timeout is read as progress, not a hang", async () => {
    const result = await run("dump", "--steps 6 --step-ms 200 --dump-after 2 --dump-mb 60", { worker: { stall_timeout: "1500ms" } });
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 6);
    expect(result.events.filter((event) => event.kind === "failure.classified")).toEqual([]);
  });

  it("a CUDA OOM after a 3 MB debug burst and 260 lines of other ranks' tracebacks is out_of_memory; the smaller batch succeeds", async () => {
    const config = join(folder.dir, "burst-oom.json");
    await writeFile(config, JSON.stringify({ train_batch_size: 64 }));
    const result = await run("burst-oom", "--steps 5 --oom-attempts 1 --burst-mb 3 --traceback-lines 260", { config });
    expect(result.outcome.state).toBe("succeeded");
    const classified = result.events.find((event) => event.kind === "failure.classified");
    expect(classified).toMatchObject({ attempt: 1, failureClass: "out_of_memory", rule: "cuda-oom" });
    expect(String(classified?.evidence)).toContain("CUDA out of memory. Tried to allocate 2.00 GiB");
    expect(result.status.attempt).toBe(2);
    expect(result.metrics.filter((record) => record.attempt === 2).map((record) => record.step)).toEqual(range(5));
    expect(result.status.step).toBe(5);
  });

  it("a log past worker.log_cap (1MiB) keeps its head, a marker with the bytes cut and its newest output; no step is lost", async () => {
    const result = await run("capped", "--steps 10 --flood-after 3 --flood-mb 24", { worker: { log_cap: "1MiB" } });
    expect(result.outcome.state).toBe("succeeded");
    expectTrueSteps(result, 10);
    const log = join(result.resultDir, "logs", "attempt-1.log");
    const { size, blocks } = await stat(log);
    // collapse (ext4, xfs): the file itself shrinks; punch (tmpfs): its blocks are freed.
    expect(Math.min(size, blocks * 512)).toBeLessThan(1.5 * (1 << 20));
    const text = await readFile(log, "utf8");
    expect(text.startsWith("step:1 - ")).toBe(true);
    expect(text).toMatch(/\[a3r\] log capped \(worker\.log_cap = 1MiB\): \d+ bytes of output were cut here/);
    expect(text.trimEnd().endsWith("training finished")).toBe(true);
    const capped = result.events.find((event) => event.kind === "log.capped");
    expect(capped).toMatchObject({ attempt: 1, log: "main", cap: "1MiB" });
    const summary = result.events.find((event) => event.kind === "log.summary");
    expect(Number(summary?.cappedBytes)).toBeGreaterThan(20 * (1 << 20));
  });
});
