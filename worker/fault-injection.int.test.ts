import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { auditResultDir, JsonlLedger, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { isGroupAlive } from "../core/process-group.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * Every failure the worker promises to handle, injected through a real child process
 * (worker/__fixtures__/trainer.mjs) and the real worker. Each case must end with a
 * truthful status.json, finish.flag, an attempts.md a person can follow, and a result
 * directory that the audit accepts.
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

async function expectComplete(resultDir: string, state: string) {
  const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
  expect(status.state).toBe(state);
  expect((await readFile(join(resultDir, "finish.flag"), "utf8")).trim()).toBe(state);
  const errors = (await auditResultDir(resultDir)).filter((finding) => finding.severity === "error");
  expect(errors).toEqual([]);
  const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
  const result = await readFile(join(resultDir, "result.md"), "utf8");
  expect(result).toContain(`Outcome: **${state}**`);
  expect(await readFile(join(resultDir, "curves.svg"), "utf8")).toContain("<svg");
  const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
  return { status, attempts, result, events, metrics: (await readMetrics(join(resultDir, "metrics.jsonl"))).records };
}

describe("worker fault injection", () => {
  it("runs a healthy trainer to success and judges the prediction with numbers", async () => {
    const { path, resultDir } = await folder.write({ id: "healthy", command: "node trainer.mjs --steps 5", frontMatter: { gpus: 2 } });
    const ledger = new JsonlLedger(join(folder.dir, "ledger.jsonl"));
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: process.env, ledger });
    expect(outcome).toMatchObject({ state: "succeeded", attempts: 1, reattached: false });
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.metrics.map((record) => record.step)).toEqual([1, 2, 3, 4, 5]);
    expect(run.status.step).toBe(5);
    expect(run.result).toContain("Verdict: **supported** — reward_mean = 0.55 (last, step 5) vs predicted >= 0.5");
    expect(run.events.map((event) => event.kind)).toEqual(expect.arrayContaining(["run.preparing", "run.launched", "run.finished"]));
    const booked = await ledger.summarize();
    expect(booked.gpu.entries).toBe(1);
    expect(booked.gpu.byBlueprint.healthy).toBeGreaterThan(0);
    expect(booked.llm.calls).toBe(0);
  });

  it("withholds model-provider keys from the run unless env_passthrough lists them, and says so", async () => {
    const env = { ...process.env, ANTHROPIC_API_KEY: "sk-ant-withheld-0123456789", OPENAI_API_KEY: "sk-passed-0123456789abcdef", HF_TOKEN: "hf_kept" };
    const printer = `node -e "console.log('anthropic=' + (process.env.ANTHROPIC_API_KEY ? 'seen' : 'absent') + ' openai=' + (process.env.OPENAI_API_KEY ? 'seen' : 'absent') + ' hf=' + (process.env.HF_TOKEN ? 'seen' : 'absent'))" && node trainer.mjs --steps 2`;
    const { path, resultDir } = await folder.write({ id: "withheld", command: printer, frontMatter: { env_passthrough: ["OPENAI_API_KEY"] } });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress, env })).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(await readFile(join(resultDir, "logs", "attempt-1.log"), "utf8")).toContain("anthropic=absent openai=seen hf=seen");
    expect(run.attempts).toContain("Withheld from the run's environment: ANTHROPIC_API_KEY (list them in env_passthrough to pass them)");
    expect(run.events.find((event) => event.kind === "run.env-withheld")?.variables).toEqual(["ANTHROPIC_API_KEY"]);
  });

  it("reads metrics from the JSONL file the run writes (A3R_METRICS_FILE)", async () => {
    const { path, resultDir } = await folder.write({ id: "jsonl", command: "node trainer.mjs --steps 4 --metrics jsonl" });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.metrics.map((record) => [record.step, record.reward_mean])).toEqual([
      [1, 0.35],
      [2, 0.4],
      [3, 0.45],
      [4, 0.5],
    ]);
  });

  it("out of memory on a large batch: halves the batch through the config copy and succeeds", async () => {
    const config = join(folder.dir, "oom.json");
    await writeFile(config, JSON.stringify({ train_batch_size: 64, lr: 0.001 }));
    const { path, resultDir } = await folder.write({ id: "oom", command: "node trainer.mjs --steps 3 --oom-above 32", config });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.status.attempt).toBe(2);
    expect(run.attempts).toContain("Classified as: **out of memory**");
    expect(run.attempts).toContain("- train_batch_size: 64\n+ train_batch_size: 32");
    expect(JSON.parse(await readFile(join(resultDir, "config", "attempt-2.json"), "utf8"))).toEqual({ train_batch_size: 32, lr: 0.001 });
    expect(run.result).toContain("train_batch_size 64 → 32");
    // blueprint.md is the blueprint as executed, with the adapted overrides.
    expect(await readFile(join(resultDir, "blueprint.md"), "utf8")).toMatch(/overrides:\s*\n?\s*train_batch_size: 32/);
  });

  it("NaN loss: stops the run, halves the learning rate and resumes from the checkpoint", async () => {
    const { path, resultDir } = await folder.write({
      id: "nan",
      command: "node trainer.mjs --steps 6 --nan-after 3 --nan-lr-above 0.0006 --step-ms 60",
      frontMatter: { overrides: { lr: 0.001 } },
    });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "nan_loss", attempt: 1 });
    expect(run.attempts).toContain("- lr: 0.001\n+ lr: 0.0005");
    expect(await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8")).toContain("resuming from checkpoint at step 3");
    // The NaN step is recorded (as NaN), then attempt 2 continues after the checkpoint.
    expect(run.metrics.filter((record) => record.attempt === 2).map((record) => record.step)).toEqual([4, 5, 6]);
    expect(run.metrics.some((record) => Number.isNaN(record.loss))).toBe(true);
  });

  it("hangs without output: the first-signal timeout stops it and the relaunch succeeds", async () => {
    const { path, resultDir } = await folder.write({
      id: "hang",
      command: "node trainer.mjs --steps 2 --hang-attempts 1",
      frontMatter: { first_signal_timeout: "2s" },
    });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "hang" });
    expect(run.attempts).toContain("no training signal within the first-signal timeout (2s)");
    // Which rule fired, its limit, and what was seen.
    expect(run.attempts).toMatch(/rule first_signal_timeout = 2s fired; \d+s after launch no step or metric was seen; the main log is empty/);
  });

  it("stalls after some steps: stall detection stops it and it resumes", async () => {
    const { path, resultDir } = await folder.write({ id: "stall", command: "node trainer.mjs --steps 4 --stall-after 2", worker: { stall_timeout: "1s" } });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.attempts).toContain("no new step for 1s after step 2 (stall)");
    expect(run.attempts).toMatch(
      /rule worker\.stall_timeout = 1s fired; step 2 was the last, recorded \d+(ms|s) ago; the main log has \d+ bytes, last written/,
    );
    expect(await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8")).toContain("resuming from checkpoint at step 2");
  });

  it("port already in use: relaunches on a free port", async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const { path, resultDir } = await folder.write({
        id: "port",
        command: "node trainer.mjs --steps 2 --port {port}",
        frontMatter: { overrides: { port: taken } },
      });
      expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("succeeded");
      const run = await expectComplete(resultDir, "succeeded");
      expect(run.events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "port_in_use" });
      const second = await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8");
      const port = Number(/listening on port (\d+)/.exec(second)?.[1]);
      expect(port).toBeGreaterThan(0);
      expect(port).not.toBe(taken);
      expect(run.attempts).toContain(`- port: ${taken}\n+ port: ${port}`);
    } finally {
      blocker.close();
    }
  });

  it("SIGKILLed from outside: resumes from the checkpoint within seconds", async () => {
    const pidFile = join(folder.dir, "killed.pids");
    const gate = join(folder.dir, "killed.gate");
    // The trainer pauses after step 3 (the gate never opens), so the kill lands mid-run.
    const { path, resultDir } = await folder.write({
      id: "killed",
      command: `node trainer.mjs --steps 8 --step-ms 50 --pause-after 3 --until-file ${gate} --pid-file ${pidFile}`,
      worker: { stall_timeout: "1m" },
    });
    const running = runWorker({ blueprintPath: path, progress: silentProgress });
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 3);
    const pid = Number((await readFile(pidFile, "utf8")).trim().split("\n")[0]);
    process.kill(pid, "SIGKILL");
    const killedAt = Date.now();
    expect((await running).state).toBe("succeeded");
    const run = await expectComplete(resultDir, "succeeded");
    expect(run.events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "killed", evidence: "terminated by SIGKILL" });
    const relaunched = run.events.find((event) => event.kind === "run.launched" && event.attempt === 2)!;
    expect(Date.parse(relaunched.time) - killedAt).toBeLessThan(5_000);
    expect(await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8")).toContain("resuming from checkpoint at step 3");
  });

  it("time budget: TERM then KILL to the whole group, no orphans, timed_out with partial results", async () => {
    const pidFile = join(folder.dir, "budget.pids");
    const { path, resultDir } = await folder.write({
      id: "budget",
      command: `node trainer.mjs --steps 1000 --step-ms 100 --children 2 --pid-file ${pidFile}`,
      // 4 s: a loaded CI machine can take over a second to start node, and the steps
      // written before the budget ends are what this checks is kept.
      budget: "4s",
    });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("timed_out");
    const run = await expectComplete(resultDir, "timed_out");
    expect(run.status.reason).toContain("time budget 4s used up");
    expect(run.metrics.length).toBeGreaterThan(0);
    expect(isGroupAlive(run.status.pgid!)).toBe(false);
    expect(run.result).toContain("Verdict: **inconclusive**");
  });

  it("external API rate limit: backs off and retries; an auth error fails at once with the exact reason", async () => {
    const limited = await folder.write({
      id: "rate-limit",
      command: "node trainer.mjs --steps 2 --rate-limited-attempts 1",
      worker: { api_backoff: ["300ms"] },
    });
    const limitedOutcome = await runWorker({ blueprintPath: limited.path, progress: silentProgress });
    expect(limitedOutcome.reason).toBeNull();
    expect(limitedOutcome.state).toBe("succeeded");
    const run = await expectComplete(limited.resultDir, "succeeded");
    expect(run.events.find((event) => event.kind === "recovery.decided")).toMatchObject({ strategy: "back_off_and_retry", delayMs: 300 });
    expect(run.attempts).toContain("Waiting 300ms first.");

    const denied = await folder.write({ id: "auth", command: "node trainer.mjs --auth-error", worker: { api_backoff: ["200ms"] } });
    expect((await runWorker({ blueprintPath: denied.path, progress: silentProgress })).state).toBe("failed");
    const failed = await expectComplete(denied.resultDir, "failed");
    // A refused key does not heal by waiting: no second attempt.
    expect(failed.status.attempt).toBe(1);
    expect(failed.status.reason).toContain("external api auth: openai.AuthenticationError: Error code: 401 - invalid api key provided (not retryable:");
  });

  it("missing module: fails fast without retrying", async () => {
    const { path, resultDir } = await folder.write({ id: "missing", command: "node no-such-trainer.mjs" });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("failed");
    const run = await expectComplete(resultDir, "failed");
    expect(run.status.attempt).toBe(1);
    expect(run.status.reason).toContain("not retryable");
  });

  it("a missing codebase fails in preparation and nothing is launched", async () => {
    const { path, resultDir } = await folder.write({ id: "prepare", command: "node trainer.mjs", codebase: "/nonexistent/a3r-codebase" });
    expect((await runWorker({ blueprintPath: path, progress: silentProgress })).state).toBe("failed");
    const run = await expectComplete(resultDir, "failed");
    expect(run.status.attempt).toBe(0);
    expect(run.status.reason).toContain("the codebase /nonexistent/a3r-codebase is not a folder");
    expect(run.events.some((event) => event.kind === "run.launched")).toBe(false);
  });

  it("a finished run is never run again", async () => {
    const { path, resultDir } = await folder.write({ id: "healthy", command: "node trainer.mjs --steps 5" });
    const before = await readFile(join(resultDir, "events.jsonl"), "utf8");
    expect(await runWorker({ blueprintPath: path, progress: silentProgress })).toMatchObject({ state: "succeeded", alreadyFinished: true });
    expect(await readFile(join(resultDir, "events.jsonl"), "utf8")).toBe(before);
  });
});

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
