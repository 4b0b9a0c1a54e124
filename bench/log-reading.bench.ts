import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readMetrics } from "../campaign/index.ts";
import { LogMetricSource } from "../worker/supervise/metric-sources.ts";
import { fixtureFolder } from "../worker/__fixtures__/fixture-blueprint.ts";
import { defaultLogMetricPatterns } from "../worker/rules/log-metrics.ts";
import { median } from "./stats.ts";
import type { Benchmark, BenchRow } from "./report.ts";

/**
 * The worker's log reader (worker/supervise/log-follower.ts, line-splitter.ts, the metric
 * patterns) against the cheapest ways to read the same bytes, and the worker's memory on a
 * flood against its memory on a quiet run:
 *
 * 1. Throughput: a log of debug lines with a metric line every 1000 lines, a log of `\r`
 *    only, a log of 2 MB lines without a newline and a log with a pathological 1 MB line
 *    for the patterns, each read to its end by a LogMetricSource (split, cut, parsed), timed
 *    against `cat file > /dev/null` and against a plain readFile of the same file (the
 *    median of 3 each). The ratios say how many times slower than a bare read the worker
 *    is; the MB/s says whether it keeps up with a trainer.
 * 2. Memory: `a3r worker run` (a real process) supervising noisy-trainer.mjs printing a
 *    200 MB flood then its steps, against the same worker supervising the same steps with
 *    no flood: the peak resident memory of the worker process (VmHWM), as a ratio.
 */
const root = join(import.meta.dirname, "..");
const MB = 1 << 20;

function timed(task: () => void): number {
  const started = performance.now();
  task();
  return performance.now() - started;
}

async function timedAsync(task: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await task();
  return performance.now() - started;
}

async function writeLog(path: string, kind: "debug" | "cr" | "long-lines" | "pathological", megabytes: number): Promise<number> {
  const size = megabytes * MB;
  if (kind === "cr") {
    await writeFile(path, "\r".repeat(size));
    return 0;
  }
  if (kind === "long-lines") {
    const line = `${"[0.125, 0.25, 0.5]".repeat(Math.ceil((2 * MB) / 18))}step:1 - reward_mean:0.5 - loss:0.1\n`;
    await writeFile(path, line.repeat(Math.ceil(size / line.length)));
    return Math.ceil(size / line.length);
  }
  if (kind === "pathological") {
    // Long runs that make a backtracking pattern quadratic: digits after a key, a word without a colon, spaces.
    const line = `step:1 - a:${"1".repeat(300_000)}x ${"b".repeat(300_000)} c:${" ".repeat(300_000)}y\n`;
    await writeFile(path, line.repeat(Math.ceil(size / line.length)));
    return 0;
  }
  const debug = "debug: grad stats mean=0.00012 std=0.98 max=4.2 (layer 17, rank 0)\n".repeat(999);
  const block = (step: number) => `${debug}step:${step} - reward_mean:0.5 - loss:0.25 - lr:0.001\n`;
  const count = Math.ceil(size / block(1).length);
  const parts: string[] = [];
  for (let step = 1; step <= count; step += 1) parts.push(block(step));
  await writeFile(path, parts.join(""));
  return count;
}

async function readerMs(path: string): Promise<{ ms: number; points: number }> {
  let points = 0;
  const ms = await timedAsync(async () => {
    const source = new LogMetricSource("bench", path, defaultLogMetricPatterns);
    points = (await source.drain()).length;
  });
  return { ms, points };
}

async function throughputRows(dir: string): Promise<{ rows: BenchRow[]; notes: string[] }> {
  const rows: BenchRow[] = [];
  const notes: string[] = [];
  const cases: Array<{ kind: "debug" | "cr" | "long-lines" | "pathological"; megabytes: number; label: string }> = [
    { kind: "debug", megabytes: 128, label: "debug lines + metrics" },
    { kind: "cr", megabytes: 64, label: "\\r only" },
    { kind: "long-lines", megabytes: 64, label: "2 MB lines, no newline" },
    { kind: "pathological", megabytes: 16, label: "1 MB pathological lines" },
  ];
  for (const { kind, megabytes, label } of cases) {
    const path = join(dir, `${kind}.log`);
    const expected = await writeLog(path, kind, megabytes);
    const cat = median([0, 1, 2].map(() => timed(() => spawnSync("sh", ["-c", `cat '${path}' > /dev/null`]))));
    const plain: number[] = [];
    for (let round = 0; round < 3; round += 1) plain.push(await timedAsync(() => readFile(path)));
    const reads: Array<{ ms: number; points: number }> = [];
    for (let round = 0; round < 3; round += 1) reads.push(await readerMs(path));
    const reader = median(reads.map((read) => read.ms));
    rows.push({ name: `${label}: worker reader MB/s`, value: megabytes / (reader / 1000), unit: "MB/s" });
    rows.push({ name: `${label}: reader / cat > /dev/null`, value: reader / cat, unit: "x" });
    rows.push({ name: `${label}: reader / readFile`, value: reader / median(plain), unit: "x" });
    if (expected > 0) rows.push({ name: `${label}: steps read / written`, value: reads[0]!.points / expected, goal: "1", met: reads[0]!.points === expected });
    notes.push(`${label}: ${megabytes} MB, reader ${reader.toFixed(0)} ms, cat ${cat.toFixed(0)} ms, readFile ${median(plain).toFixed(0)} ms`);
    await rm(path, { force: true });
  }
  return { rows, notes };
}

/** Peak resident memory (kB) of a worker process running `args` of noisy-trainer.mjs, and the steps it recorded. */
async function workerPeak(folder: Awaited<ReturnType<typeof fixtureFolder>>, id: string, args: string): Promise<{ peakKb: number; steps: number }> {
  const { path, resultDir } = await folder.write({ id, command: `node noisy-trainer.mjs ${args}`, worker: { poll_interval: "200ms" } });
  const child = spawn(process.execPath, [join(root, "bin", "a3r.js"), "worker", "run", path], { cwd: root, stdio: "ignore" });
  let peakKb = 0;
  const sample = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      const hwm = Number(/VmHWM:\s*(\d+)/.exec(status)?.[1] ?? 0);
      peakKb = Math.max(peakKb, hwm);
    } catch {
      // Gone.
    }
  }, 25);
  await new Promise((resolve) => child.once("exit", resolve));
  clearInterval(sample);
  const steps = (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length;
  return { peakKb, steps };
}

const benchmark: Benchmark = {
  title: "worker: log reading (throughput vs cat and readFile; memory on a flood vs a quiet run)",
  async run() {
    const dir = await mkdtemp(join(tmpdir(), "a3r-bench-logs-"));
    const folder = await fixtureFolder();
    try {
      const throughput = await throughputRows(dir);
      const quiet = await workerPeak(folder, "quiet", "--steps 10 --step-ms 50");
      const flood = await workerPeak(folder, "flood", "--steps 10 --step-ms 50 --flood-after 2 --flood-mb 200");
      const crs = await workerPeak(folder, "carriage-returns", "--steps 10 --step-ms 50 --cr-mb 200");
      const rows: BenchRow[] = [
        ...throughput.rows,
        { name: "worker peak memory, quiet run", value: quiet.peakKb / 1024, unit: "MiB" },
        { name: "worker peak memory, 200 MB flood", value: flood.peakKb / 1024, unit: "MiB" },
        { name: "ratio flood / quiet (memory)", value: flood.peakKb / quiet.peakKb, unit: "x", goal: "<= 1.5", met: flood.peakKb / quiet.peakKb <= 1.5 },
        { name: "worker peak memory, 200 MB of \\r", value: crs.peakKb / 1024, unit: "MiB" },
        { name: "ratio \\r flood / quiet (memory)", value: crs.peakKb / quiet.peakKb, unit: "x", goal: "<= 1.5", met: crs.peakKb / quiet.peakKb <= 1.5 },
        { name: "steps recorded / 10, flood", value: flood.steps / 10, goal: "1", met: flood.steps === 10 },
        { name: "steps recorded / 10, \\r flood", value: crs.steps / 10, goal: "1", met: crs.steps === 10 },
      ];
      return {
        title: this.title,
        rows,
        notes: [...throughput.notes, "memory: VmHWM of the `a3r worker run` process, sampled every 25 ms; the trainer is another process"],
      };
    } finally {
      await folder.cleanup();
      await rm(dir, { recursive: true, force: true });
    }
  },
};

export default benchmark;
