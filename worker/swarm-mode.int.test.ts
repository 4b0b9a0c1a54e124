import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { memoryFromStatus } from "./run-memory.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * Swarm mode with the real swarm server (embedded CPU policy) and the real item-color
 * client: the worker starts the server, waits for its URL, starts the client, reads step
 * metrics from /metrics, restarts a crashed client alone, and restarts a crashed server
 * with --resume from its last checkpoint.
 */
const repository = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
let config: string;
beforeAll(async () => {
  folder = await fixtureFolder();
  config = join(folder.dir, "swarm.yaml");
  await writeFile(config, [
    "model: { kind: embedded, seed: 1 }",
    "train_batch_size: 4",
    "num_repeat: 4",
    "optimizer: { lr: 0.05, kl_coef: 0.001, clip: 0.2 }",
    "sampling: { temperature: 1, top_p: 1, max_tokens: 8 }",
    "save_freq: 2",
    "max_steps: 6",
    "experiment_dir: ./ignored-the-worker-sets-it",
    "port: 10086",
  ].join("\n"));
});
afterAll(async () => {
  await folder.cleanup();
});

const client = `node bin/a3r.js swarm client item-color --url {swarm_url} --episodes 1000 --concurrency 2`;

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function processesOf(resultDir: string) {
  return memoryFromStatus((await readRunStatus(join(resultDir, "status.json"))).status, {}).processes;
}

describe("worker in swarm mode", () => {
  it("runs server and client to max_steps, restarting a crashed client alone", async () => {
    const { path, resultDir } = await folder.write({ id: "swarm-client-crash", mode: "swarm", config, command: client, codebase: repository, frontMatter: { overrides: { lr: 0.1 }, first_signal_timeout: "30s" }, worker: { stall_timeout: "30s" } });
    const running = runWorker({ blueprintPath: path, progress: silentProgress });
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 1);
    const [server, firstClient] = await processesOf(resultDir);
    process.kill(-firstClient!.pgid, "SIGKILL");
    const outcome = await running;
    expect(outcome).toMatchObject({ state: "succeeded", attempts: 1 });
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.find((event) => event.kind === "client.restarted")).toMatchObject({ role: "client-1", restart: 1 });
    expect(events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    const [serverAfter] = await processesOf(resultDir);
    expect(serverAfter!.pid).toBe(server!.pid);
    const metrics = (await readMetrics(join(resultDir, "metrics.jsonl"))).records;
    expect(metrics.map((record) => record.step)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(typeof metrics[0]!.reward_mean).toBe("number");
    const copy = await readFile(join(resultDir, "config", "attempt-1.yaml"), "utf8");
    expect(copy).toContain("lr: 0.1");
    expect(copy).toContain(`experiment_dir: ${join(resultDir, "swarm")}`);
    const result = await readFile(join(resultDir, "result.md"), "utf8");
    expect(result).toMatch(/Verdict: \*\*(supported|refuted)\*\* — reward_mean = [\d.]+ \(last, step 6\)/);
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  });

  it("restarts a crashed server with --resume from its last checkpoint", async () => {
    const { path, resultDir } = await folder.write({ id: "swarm-server-crash", mode: "swarm", config, command: client, codebase: repository, frontMatter: { first_signal_timeout: "30s" }, worker: { stall_timeout: "30s" } });
    const running = runWorker({ blueprintPath: path, progress: silentProgress });
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.some((record) => record.step >= 3));
    const [server] = await processesOf(resultDir);
    process.kill(-server!.pgid, "SIGKILL");
    expect((await running).state).toBe("succeeded");
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "killed", attempt: 1 });
    expect(events.find((event) => event.kind === "run.launched" && event.attempt === 2)).toMatchObject({ resume: true });
    const attempt2 = (await processesOf(resultDir))[0]!;
    expect(attempt2.command).toContain("--resume");
    const metrics = (await readMetrics(join(resultDir, "metrics.jsonl"))).records;
    const resumedSteps = metrics.filter((record) => record.attempt === 2).map((record) => record.step);
    expect(resumedSteps[resumedSteps.length - 1]).toBe(6);
    expect(resumedSteps[0]).toBeGreaterThan(2);
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  });
});
