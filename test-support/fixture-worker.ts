import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { readBlueprintFile } from "../blueprints/index.ts";
import { JsonlLedger, readResultDir, readStopRequest, ResultDirWriter } from "../campaign/index.ts";
import { isA3rError } from "../core/errors.ts";

/**
 * A stand-in worker for launcher tests: `worker run <blueprint.md> --result-dir DIR` writes
 * a complete result directory through campaign/ (lease, legal status changes, metrics,
 * result.md, finish.flag last), like `a3r worker run`, but only counts steps.
 *
 * The blueprint's front matter steers it: `fixture: { steps: 5, step_ms: 200, fail: false }`.
 * Every start appends a `run.launched` event, so a test can count launches. SIGTERM ends
 * the run as cancelled, a stop request (stop-request.json) as stopped_early. A finished result directory is left alone (never run twice); a
 * running one whose worker died is taken over from its last step.
 */
interface FixtureSettings {
  steps: number;
  stepMs: number;
  fail: boolean;
}

function settingsOf(frontMatter: Record<string, unknown>): FixtureSettings {
  const fixture = (frontMatter.fixture ?? {}) as Record<string, unknown>;
  return {
    steps: typeof fixture.steps === "number" ? fixture.steps : 3,
    stepMs: typeof fixture.step_ms === "number" ? fixture.step_ms : 100,
    fail: fixture.fail === true,
  };
}

export async function runFixtureWorker(argv: string[]): Promise<number> {
  if (argv[0] === "--version") {
    process.stdout.write("a3r-fixture 0.0.0\n");
    return 0;
  }
  const [verb, action, blueprintFile, flag, resultDir] = argv;
  if (verb !== "worker" || action !== "run" || !blueprintFile || flag !== "--result-dir" || !resultDir) {
    process.stderr.write("usage: fixture-a3r worker run <blueprint.md> --result-dir DIR\n");
    return 2;
  }
  // What a real worker away from its campaign is given: `--llm-tokens N --llm-usd X`.
  const limits = llmLimitsOf(argv.slice(5));
  const blueprint = await readBlueprintFile(blueprintFile);
  const settings = settingsOf(blueprint.frontMatter);
  const existing = await readResultDir(resultDir).catch(() => undefined);
  if (existing?.finishFlag) {
    process.stderr.write(`${resultDir} has finished (${existing.finishFlag.text}); nothing to do\n`);
    return 0;
  }
  const host = process.env.A3R_HOST ?? hostname();
  // host:pid of this machine, as the real worker's: a revived fixture takes a dead one's lease at once.
  const run = await openWaitingOutLease(resultDir);
  await run.writeBlueprint(await readFile(blueprintFile, "utf8"));
  await run.appendEvent("run.launched", {
    blueprintId: blueprint.id,
    host,
    pid: process.pid,
    gpus: process.env.CUDA_VISIBLE_DEVICES ?? "",
    ...(limits === undefined ? {} : { llmLimits: limits }),
  });
  // Given an allowance, it books one diagnosis call within it in its own ledger, as the
  // real worker does when it cannot reach the campaign's.
  if (limits !== undefined) {
    await new JsonlLedger(join(resultDir, "ledger.jsonl")).record({
      kind: "llm",
      role: "diagnose",
      provider: "scripted",
      model: "fixture",
      inputTokens: 1,
      outputTokens: 1,
      cachedTokens: 0,
      costUsd: 0,
      durationMs: 1,
      ok: true,
    });
  }
  // A run a dead worker left running is taken over where it stands (a revived worker).
  const resumedAt = existing?.status?.state === "running" ? (existing.status.step ?? 0) : 0;
  if (resumedAt === 0 && existing?.status?.state !== "running") {
    await run.writeStatus({ state: "queued", host });
    await run.writeStatus({ state: "preparing" });
  }
  await run.writeStatus({
    state: "running",
    attempt: (existing?.status?.attempt ?? 0) + 1,
    pid: process.pid,
    pgid: process.pid,
    startedAt: new Date().toISOString(),
  });

  let stopping = false;
  process.once("SIGTERM", () => {
    stopping = true;
  });
  const finishAs = async (state: "succeeded" | "failed" | "cancelled" | "stopped_early", reason: string | null): Promise<number> => {
    await run.writeStatus({ state, reason });
    await run.writeResult(`# Result: ${blueprint.id}\n\nOutcome: ${state}${reason ? ` (${reason})` : ""}.\n`);
    await run.finish();
    await run.release();
    return state === "succeeded" ? 0 : 1;
  };
  for (let step = resumedAt + 1; step <= settings.steps; step += 1) {
    await new Promise((done) => setTimeout(done, settings.stepMs));
    if (stopping) return finishAs("cancelled", "cancelled by SIGTERM");
    // A stop request (a launcher's requestStop) is honoured as the real worker does.
    const stop = await readStopRequest(resultDir);
    if (stop.kind === "request") return finishAs(stop.request.state, `stopped early at step ${step - 1}: ${stop.request.reason}`);
    const reward = step / settings.steps;
    await run.appendMetrics({ step, reward_mean: reward });
    await run.heartbeat({ step, lastMetrics: { reward_mean: reward } });
  }
  if (stopping) return finishAs("cancelled", "cancelled by SIGTERM");
  return settings.fail ? finishAs("failed", "fixture told to fail") : finishAs("succeeded", null);
}

/** Like the real worker, waits a while for a lease a dead worker left (it may still be a zombie). */
async function openWaitingOutLease(resultDir: string): Promise<ResultDirWriter> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await ResultDirWriter.open(resultDir, `${hostname()}:${process.pid}`, { ttlMs: 60_000 });
    } catch (error) {
      // LOCK_TIMEOUT: the dead worker was killed inside the directory lock; it goes stale.
      if (!(isA3rError(error, "LEASE_HELD") || isA3rError(error, "LOCK_TIMEOUT")) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** `--llm-tokens N --llm-usd X` (either or both) as numbers; undefined when neither is given. */
function llmLimitsOf(args: string[]): { tokens?: number; usd?: number } | undefined {
  const limits: { tokens?: number; usd?: number } = {};
  for (let index = 0; index < args.length; index += 2) {
    if (args[index] === "--llm-tokens") limits.tokens = Number(args[index + 1]);
    else if (args[index] === "--llm-usd") limits.usd = Number(args[index + 1]);
  }
  return Object.keys(limits).length === 0 ? undefined : limits;
}
