import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { memoryFromStatus } from "./run/run-memory.ts";
import { processEnvVariable } from "../core/process-group.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
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
  await writeFile(
    config,
    [
      "model: { kind: embedded, seed: 1 }",
      "train_batch_size: 4",
      "num_repeat: 4",
      "optimizer: { lr: 0.05, kl_coef: 0.001, clip: 0.2 }",
      "sampling: { temperature: 1, top_p: 1, max_tokens: 8 }",
      "save_freq: 2",
      "max_steps: 8",
      "experiment_dir: ./ignored-the-worker-sets-it",
      "port: 10086",
      "episode_idle_timeout: 3",
    ].join("\n"),
  );
});
afterAll(async () => {
  await folder.cleanup();
});

// A client with a short discard timeout, so the episodes of a killed client are reclaimed in seconds.
const client = `node bin/run-ts.js worker/__fixtures__/swarm-client.ts {swarm_url} 1000 2`;

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
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
  it("runs server and client to max_steps; a crashed client is restarted alone, a crashed server resumes from its checkpoint", async () => {
    const { path, resultDir } = await folder.write({
      id: "swarm-crashes",
      mode: "swarm",
      config,
      command: client,
      codebase: repository,
      frontMatter: { overrides: { lr: 0.1 }, first_signal_timeout: "45s" },
      worker: { stall_timeout: "45s" },
    });
    const running = runWorker({ blueprintPath: path, progress: silentProgress });
    const metricsPath = join(resultDir, "metrics.jsonl");
    await until(async () => (await readMetrics(metricsPath)).records.length >= 1);
    const [server, firstClient] = await processesOf(resultDir);
    // The server got a per-run admin token through its environment only, and enforces it.
    const token = processEnvVariable(server!.pid, "A3R_SWARM_ADMIN_TOKEN")!;
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(processEnvVariable(firstClient!.pid, "A3R_SWARM_ADMIN_TOKEN")).toBe(token);
    const url = memoryFromStatus((await readRunStatus(join(resultDir, "status.json"))).status, {}).swarmUrl!;
    expect((await fetch(`${url}/get_server_experiment_dir`)).status).toBe(401);
    expect((await fetch(`${url}/get_server_experiment_dir`, { headers: { "x-admin-token": token } })).status).toBe(200);
    process.kill(-firstClient!.pgid, "SIGKILL");
    await until(async () => (await readEvents(join(resultDir, "events.jsonl"))).events.some((event) => event.kind === "client.restarted"));
    const [serverAfterClientCrash, restartedClient] = await processesOf(resultDir);
    expect(serverAfterClientCrash!.pid).toBe(server!.pid);
    expect(restartedClient!.pid).not.toBe(firstClient!.pid);
    expect(restartedClient!.logFile).toMatch(/attempt-1-client-1\.r1\.log$/);

    await until(async () => (await readMetrics(metricsPath)).records.some((record) => record.step >= 3));
    process.kill(-server!.pgid, "SIGKILL");
    expect(await running).toMatchObject({ state: "succeeded", attempts: 2 });

    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.find((event) => event.kind === "client.restarted")).toMatchObject({ role: "client-1", restart: 1, attempt: 1 });
    expect(events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "killed", attempt: 1 });
    expect(events.find((event) => event.kind === "run.launched" && event.attempt === 2)).toMatchObject({ resume: true });
    expect((await processesOf(resultDir))[0]!.command).toContain("--resume");

    const metrics = (await readMetrics(metricsPath)).records;
    const first = metrics.filter((record) => record.attempt === 1).map((record) => record.step);
    const resumed = metrics.filter((record) => record.attempt === 2).map((record) => record.step);
    expect(first.slice(0, 3)).toEqual([1, 2, 3]);
    // The checkpoint is every 2 steps: attempt 2 continues after it, to max_steps.
    expect(resumed[0]).toBeGreaterThan(2);
    expect(resumed[resumed.length - 1]).toBe(8);
    expect(typeof metrics[0]!.reward_mean).toBe("number");

    const copy = await readFile(join(resultDir, "config", "attempt-2.yaml"), "utf8");
    expect(copy).toContain("lr: 0.1");
    expect(copy).toContain(`experiment_dir: ${join(resultDir, "swarm")}`);
    const result = await readFile(join(resultDir, "result.md"), "utf8");
    expect(result).toMatch(/Verdict: \*\*(supported|refuted)\*\* — reward_mean = [\d.]+ \(last, step 8\)/);
    const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attempts).toContain("## Attempt 2: relaunched, resuming from the last checkpoint");
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
    // No file of the result directory (status, attempts.md, events, logs, config copies) holds the token.
    const files = (await readdir(resultDir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) expect(await readFile(join(file.parentPath, file.name), "utf8"), file.name).not.toContain(token);
  });
});
