import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { JsonlLedger, readEvents, readMetrics } from "../campaign/index.ts";
import { createScriptedChatModel } from "../llm/index.ts";
import { agentJetBackoffMs, backoffDetectionDelayMs, backoffLooksWithin } from "../worker/supervise/backoff-polling.ts";
import { silentProgress } from "../worker/supervise/progress-reporter.ts";
import { runWorker } from "../worker/run-worker.ts";
import { fixtureFolder } from "../worker/__fixtures__/fixture-blueprint.ts";
import type { Benchmark, BenchReport } from "./report.ts";

/**
 * The worker's two claims against AgentJet's LLM-polling supervisor, measured with the real
 * worker and a fixture trainer (worker/__fixtures__/trainer.mjs), default poll interval:
 *
 * 1. LLM tokens per monitored hour of a healthy run: a model IS configured (a scripted one
 *    that would answer anything, booked in a ledger); a healthy run is supervised to the
 *    end and the ledger is counted. Next to it: the looks (LLM calls) AgentJet's backoff
 *    makes in a healthy hour.
 * 2. Failure-to-relaunch latency: the trainer is SIGKILLed three times during one run; the
 *    latency is from the kill to the next attempt's launch event. Next to it: the detection
 *    delay of the 30 s → 1 → 2 → 4 → 8 → 16 min backoff for the same failure times (since
 *    the watch began), and for failures later in a long run, where the backoff has grown.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await sleep(20);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function healthyTokens(folder: Awaited<ReturnType<typeof fixtureFolder>>): Promise<{ tokens: number; calls: number; monitoredMs: number }> {
  const { path, resultDir } = await folder.write({
    id: "bench-healthy",
    command: "node trainer.mjs --steps 40 --step-ms 100",
    worker: { poll_interval: "1s", heartbeat_interval: "10s", lease_ttl: "1m" },
  });
  const ledger = new JsonlLedger(join(resultDir, "ledger.jsonl"));
  const model = createScriptedChatModel([{ parsed: { diagnosis: "would answer", retry: false }, repeat: true }], { sink: ledger }, {});
  const started = Date.now();
  const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, model });
  if (outcome.state !== "succeeded") throw new Error(`healthy run ended ${outcome.state}`);
  const summary = await ledger.summarize().catch(() => undefined);
  const tokens = summary ? summary.llm.inputTokens + summary.llm.outputTokens : 0;
  return { tokens, calls: summary?.llm.calls ?? 0, monitoredMs: Date.now() - started };
}

async function relaunchLatencies(folder: Awaited<ReturnType<typeof fixtureFolder>>): Promise<{ latencies: number[]; failureTimes: number[] }> {
  const pidFile = join(folder.dir, "bench-killed.pids");
  const { path, resultDir } = await folder.write({
    id: "bench-killed",
    command: `node trainer.mjs --steps 60 --step-ms 100 --pid-file ${pidFile}`,
    worker: { poll_interval: "1s" },
  });
  const running = runWorker({ blueprintPath: path, progress: silentProgress, model: null });
  const kills: number[] = [];
  for (let kill = 1; kill <= 3; kill += 1) {
    // Wait for two new steps of the current attempt, then kill its trainer from outside.
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.filter((record) => record.attempt === kill).length >= 2);
    const pids = (await readFile(pidFile, "utf8")).trim().split("\n");
    process.kill(Number(pids[kill - 1]), "SIGKILL");
    kills.push(Date.now());
    await until(async () =>
      (await readEvents(join(resultDir, "events.jsonl"))).events.some((event) => event.kind === "run.launched" && event.attempt === kill + 1),
    );
  }
  const outcome = await running;
  if (outcome.state !== "succeeded") throw new Error(`killed run ended ${outcome.state}: ${outcome.reason}`);
  const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
  const firstLaunch = Date.parse(events.find((event) => event.kind === "run.launched")!.time);
  const latencies = kills.map(
    (killedAt, index) => Date.parse(events.find((event) => event.kind === "run.launched" && event.attempt === index + 2)!.time) - killedAt,
  );
  return { latencies, failureTimes: kills.map((killedAt) => killedAt - firstLaunch) };
}

const benchmark: Benchmark = {
  title: "worker: deterministic supervision vs LLM backoff polling",
  async run(): Promise<BenchReport> {
    const folder = await fixtureFolder();
    try {
      const healthy = await healthyTokens(folder);
      const tokensPerHour = healthy.tokens / (healthy.monitoredMs / 3_600_000);
      const { latencies, failureTimes } = await relaunchLatencies(folder);
      const measured = median(latencies);
      const sameTimes = failureTimes.map((at) => backoffDetectionDelayMs(at));
      const laterTimes = [5 * 60_000, 30 * 60_000, 2 * 3_600_000, 12 * 3_600_000];
      const later = laterTimes.map((at) => backoffDetectionDelayMs(at));
      const meanLater = later.reduce((sum, value) => sum + value, 0) / later.length;
      return {
        title: this.title,
        rows: [
          { name: "LLM tokens per monitored hour, healthy run (worker)", value: tokensPerHour, unit: "tokens/h", goal: "0", met: tokensPerHour === 0 },
          { name: "LLM calls during the healthy run (worker)", value: healthy.calls },
          { name: "LLM looks in a healthy hour (AgentJet backoff)", value: backoffLooksWithin(3_600_000), unit: "calls/h" },
          { name: "failure-to-relaunch latency, median of 3 kills (worker)", value: measured / 1000, unit: "s", goal: "<= 5", met: measured <= 5_000 },
          {
            name: "failure-to-relaunch latency, worst of 3 kills (worker)",
            value: Math.max(...latencies) / 1000,
            unit: "s",
            goal: "<= 5",
            met: Math.max(...latencies) <= 5_000,
          },
          { name: "detection delay for the same failure times (backoff), median", value: median(sameTimes) / 1000, unit: "s" },
          { name: "ratio backoff delay / worker latency, same failure times", value: median(sameTimes) / measured, unit: "x" },
          { name: "detection delay, failures at 5m/30m/2h/12h (backoff), mean", value: meanLater / 1000, unit: "s" },
          { name: "ratio backoff delay / worker latency, failures at 5m..12h", value: meanLater / measured, unit: "x" },
        ],
        notes: [
          `worker poll interval 1 s (the default); failure times since launch: ${failureTimes.map((at) => (at / 1000).toFixed(1)).join(", ")} s; worker latencies ${latencies.map((value) => (value / 1000).toFixed(2)).join(", ")} s`,
          `backoff schedule ${agentJetBackoffMs.map((ms) => `${ms / 1000}s`).join(" → ")}, then every ${agentJetBackoffMs[agentJetBackoffMs.length - 1]! / 60_000} min; backoff delays only detect, the worker's latency includes the relaunch`,
          `healthy run monitored for ${(healthy.monitoredMs / 1000).toFixed(1)} s with a scripted model configured and a ledger attached`,
        ],
      };
    } finally {
      await folder.cleanup();
    }
  },
};

export default benchmark;
