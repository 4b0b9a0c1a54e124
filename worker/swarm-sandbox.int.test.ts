import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readlinkSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { groupNetworkNamespace } from "../core/sandbox/network-namespace.ts";
import { chooseSandbox } from "../core/sandbox/sandbox-choice.ts";
import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";
import { memoryFromStatus } from "./run/run-memory.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * A swarm run inside the sandbox (launch/sandbox-plan.ts): the real swarm server (embedded
 * CPU engine) and the real item-color client, each in bubblewrap, share one loopback-only
 * network namespace that is not the host's; the server's own address answers nobody on the
 * host, and the worker supervises it through the relay (core/sandbox/port-relay.mjs); a
 * crashed client is restarted into the same namespace.
 */
const bwrapWorks = (() => {
  try {
    return chooseSandbox({ host: "bwrap" }, process.env).mode === "bwrap";
  } catch {
    return false;
  }
})();
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
      "max_steps: 4",
      "experiment_dir: ./ignored-the-worker-sets-it",
      "episode_idle_timeout: 3",
    ].join("\n"),
  );
});
afterAll(async () => {
  await folder.cleanup();
});

async function until(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!bwrapWorks || !slowTests)(`a swarm run inside the sandbox${slowTierNote}`, () => {
  it("server and client share one loopback-only namespace; the host reaches the server only through the worker's relay; a crashed client rejoins it", async () => {
    const { path, resultDir } = await folder.write({
      id: "swarm-sandboxed",
      mode: "swarm",
      config,
      command: "node bin/run-ts.js worker/__fixtures__/swarm-client.ts {swarm_url} 1000 2",
      codebase: repository,
      frontMatter: { sandbox: "bwrap", first_signal_timeout: "60s" },
      worker: { stall_timeout: "60s" },
    });
    const running = runWorker({ blueprintPath: path, progress: silentProgress });
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 1);
    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    const [server, client] = memoryFromStatus(status, {}).processes;
    const ours = readlinkSync("/proc/self/ns/net");
    const serverNet = readlinkSync(groupNetworkNamespace(server!.pgid)!);
    expect(serverNet).not.toBe(ours);
    expect(readlinkSync(groupNetworkNamespace(client!.pgid)!)).toBe(serverNet);
    // The address the server printed is inside its namespace: nothing answers it here.
    const inside = /swarm server ready on (\S+)/.exec(await readFile(server!.logFile, "utf8"))![1]!;
    await expect(fetch(`${inside}/get_server_experiment_dir`, { signal: AbortSignal.timeout(3000) })).rejects.toThrow();
    // The worker's address is the relay: the server answers there (and wants its token).
    const relay = memoryFromStatus(status, {}).swarmUrl!;
    expect(relay).not.toBe(inside);
    expect((await fetch(`${relay}/get_server_experiment_dir`)).status).toBe(401);
    process.kill(-client!.pgid, "SIGKILL");
    await until(async () => (await readEvents(join(resultDir, "events.jsonl"))).events.some((event) => event.kind === "client.restarted"));
    const restarted = memoryFromStatus((await readRunStatus(join(resultDir, "status.json"))).status, {}).processes[1]!;
    await until(async () => groupNetworkNamespace(restarted.pgid) !== undefined, 10_000);
    expect(readlinkSync(groupNetworkNamespace(restarted.pgid)!)).toBe(serverNet);
    expect(await running).toMatchObject({ state: "succeeded" });
    const final = (await readRunStatus(join(resultDir, "status.json"))).status as Record<string, unknown>;
    expect(final.sandbox).toMatchObject({ mode: "bwrap", why: expect.stringContaining("loopback only, shared by the server and its clients") });
    expect(Math.max(...(await readMetrics(join(resultDir, "metrics.jsonl"))).records.map((record) => record.step))).toBe(4);
    expect(await readFile(join(resultDir, "result.md"), "utf8")).toContain("- Sandbox: bwrap");
  });
});
