import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../../campaign/index.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { describeLauncherConformance, waitForProgress } from "../../test-support/launcher-conformance.ts";
import { rayMissing, startRayCluster, type RayClusterHandle } from "../../test-support/ray-cluster.ts";
import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";
import { checkHost, resolveCapacity } from "../index.ts";
import type { RayHostConfig } from "./ray-config.ts";
import { RayLauncher } from "./ray-launcher.ts";

/**
 * The ray launcher against a real Ray head (`ray start --head`, 4 CPUs and 2 fake GPUs, in a
 * loopback-only network namespace: test-support/ray-cluster.ts). Ray starts in 5 s and more,
 * so the file is in the slow tier.
 */
const missing = rayMissing();
let cluster: Promise<RayClusterHandle> | undefined;
const clusterOnce = () => (cluster ??= startRayCluster({ cpus: 4, gpus: 2 }));
afterAll(async () => {
  await (await cluster?.catch(() => undefined))?.stop();
}, 60_000);

function rayHost(ray: RayClusterHandle, workdir: string, overrides: Partial<RayHostConfig> = {}): RayHostConfig {
  return {
    name: "ray-cluster",
    kind: "ray",
    address: ray.address,
    python: ray.python,
    namespace: "a3r",
    gpus_per_run: 0,
    cpus_per_run: 0.5,
    environment: { A3R_TEST_MARK: "from-hosts-yaml" },
    max_restarts: 3,
    workdir,
    a3r: fixtureA3rCommand,
    ...overrides,
  };
}

/** A process's state letter (R, S, Z...), or undefined when there is none of that pid. */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0];
  } catch {
    return undefined;
  }
}

const starts = async (runDir: string) =>
  (await readFile(join(runDir, "ray-starts.jsonl"), "utf8").catch(() => ""))
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { at: string; kind: string; actor_pid: number; worker_pid?: number; gpus?: string; restarted: boolean });

describe.skipIf(missing !== undefined || !slowTests)(`ray host${missing ? ` (skipped: ${missing})` : slowTierNote}`, () => {
  describeLauncherConformance("ray", async () => {
    const ray = await clusterOnce();
    const workdir = await mkdtemp(join(tmpdir(), "a3r-ray-host-"));
    const opened: RayLauncher[] = [];
    const make = () => {
      const launcher = new RayLauncher({ host: rayHost(ray, workdir) });
      opened.push(launcher);
      return launcher;
    };
    return {
      launcher: make(),
      reopen: async () => make(),
      cleanup: async () => {
        for (const launcher of opened) await launcher.close();
        await rm(workdir, { recursive: true, force: true });
      },
    };
  });

  describe("ray launcher against a real Ray", () => {
    let ray: RayClusterHandle;
    let folder: string;
    let launcher: RayLauncher;
    const campaign = "ray-cases";

    beforeAll(async () => {
      ray = await clusterOnce();
      folder = await mkdtemp(join(tmpdir(), "a3r-ray-cases-"));
      launcher = new RayLauncher({ host: rayHost(ray, join(folder, "host")) });
    }, 120_000);
    afterAll(async () => {
      await launcher?.close();
      await rm(folder, { recursive: true, force: true });
    });

    const request = async (id: string, options: { steps?: number; stepMs?: number; gpus?: number } = {}) => ({
      campaign,
      blueprintId: id,
      blueprintFile: await writeFixtureBlueprint(folder, { id, campaign, ...options }),
      gpuIndices: Array.from({ length: options.gpus ?? 0 }, (_, index) => index),
      resultDir: join(folder, "unused", id),
    });
    const runDir = (id: string) => join(folder, "host", campaign, id);

    it("places GPU runs where Ray has room, queues the one that does not fit, and reports each placement's latency", async () => {
      const ids = ["gpu-a", "gpu-b", "gpu-c"];
      const launchedAt = new Map<string, number>();
      for (const id of ids) {
        const blueprint = await request(id, { steps: 12, stepMs: 250, gpus: 1 });
        launchedAt.set(id, Date.now());
        expect((await launcher.launch(blueprint)).started).toBe(true);
      }
      const refs = ids.map((blueprintId) => ({ campaign, blueprintId }));
      // Two fake GPUs: the third run waits in Ray until one frees.
      const waiting = await waitForProgress(launcher, refs[2]!, (progress) => progress.state === "queued" || progress.state === "running", 60_000);
      const latency = new Map<string, number>();
      for (const ref of refs.slice(0, 2)) {
        await waitForProgress(launcher, ref, (progress) => progress.state === "running", 60_000);
        // Placed: the actor's own record of starting the worker on its node.
        const placedAt = Date.parse((await starts(runDir(ref.blueprintId)))[0]!.at);
        latency.set(ref.blueprintId, placedAt - launchedAt.get(ref.blueprintId)!);
      }
      expect(waiting.state).toBe("queued");
      expect(waiting.reason).toMatch(/waiting in Ray for room \(1 GPU/);
      for (const ref of refs) expect((await waitForProgress(launcher, ref, (progress) => progress.finished, 90_000)).state).toBe("succeeded");
      const gpus = await Promise.all(ids.map(async (id) => (await starts(runDir(id)))[0]?.gpus));
      // Ray, not a3r, chose each run's GPU: the two running at once never shared one.
      expect(new Set(gpus.slice(0, 2))).toEqual(new Set(["0", "1"]));
      const launched = (await readEvents(join(runDir("gpu-a"), "result", "events.jsonl"))).events.find((event) => event.kind === "run.launched");
      expect(launched?.gpus).toBe(gpus[0]);
      console.log(
        `ray placement latency (launch call to the actor starting the worker on its node): ${[...latency].map(([id, ms]) => `${id} ${ms} ms`).join(", ")}`,
      );
    }, 180_000);

    it("keeps a run going through a killed Ray worker process: Ray restarts the actor, which adopts the running worker", async () => {
      // 30 s of training: Ray's restart of the actor must come while the worker still runs,
      // which a loaded CI machine (seconds per restart) does not grant a 6 s run.
      const { ref } = await launcher.launch(await request("actor-killed", { steps: 150, stepMs: 200 }));
      await waitForProgress(launcher, ref, (progress) => (progress.step ?? 0) >= 2, 60_000);
      const [first] = await starts(runDir("actor-killed"));
      expect(first?.kind).toBe("started");
      process.kill(first!.actor_pid, "SIGKILL");
      const done = await waitForProgress(launcher, ref, (progress) => progress.finished || progress.state === "lost", 120_000);
      expect(done.state).toBe("succeeded");
      const all = await starts(runDir("actor-killed"));
      expect(all.map((line) => line.kind)).toEqual(["started", "adopted"]);
      expect(all[1]).toMatchObject({ worker_pid: first!.worker_pid, restarted: true });
      // One worker, one attempt: the run was never started twice.
      const events = await readEvents(join(runDir("actor-killed"), "result", "events.jsonl"));
      expect(events.events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    }, 240_000);

    it("cancels a run whose actor is being restarted: the new incarnation stops the worker it adopted, none is left running", async () => {
      const { ref } = await launcher.launch(await request("cancel-restarting", { steps: 200, stepMs: 100 }));
      await waitForProgress(launcher, ref, (progress) => (progress.step ?? 0) >= 2, 60_000);
      const [first] = await starts(runDir("cancel-restarting"));
      process.kill(first!.actor_pid, "SIGKILL");
      // At once, while Ray restarts the actor: removing it then would orphan the worker.
      expect(await launcher.cancel(ref)).toBe(true);
      const done = await waitForProgress(launcher, ref, (progress) => progress.finished || progress.state === "lost", 90_000);
      expect(done.state).toBe("cancelled");
      // Gone (or a zombie its new parent has yet to reap), not running on unsupervised.
      const until = Date.now() + 30_000;
      while (processState(first!.worker_pid!) !== undefined && processState(first!.worker_pid!) !== "Z" && Date.now() < until)
        await new Promise((resolveWait) => setTimeout(resolveWait, 100));
      expect(processState(first!.worker_pid!) ?? "gone").toMatch(/^(gone|Z)$/);
    }, 150_000);

    it("keeps a run going through a killed driver: the next call starts a new one, a fresh launcher finds the run by name", async () => {
      const { ref } = await launcher.launch(await request("driver-killed", { steps: 20, stepMs: 200 }));
      await waitForProgress(launcher, ref, (progress) => progress.state === "running", 60_000);
      const driverPid = launcher.driver.pid!;
      process.kill(driverPid, "SIGKILL");
      await new Promise((resolveWait) => setTimeout(resolveWait, 300));
      const other = new RayLauncher({ host: rayHost(ray, join(folder, "host")) });
      try {
        expect((await other.launch(await request("driver-killed", { steps: 20, stepMs: 200 }))).started).toBe(false);
        const done = await waitForProgress(launcher, ref, (progress) => progress.finished, 90_000);
        expect(done.state).toBe("succeeded");
        expect(launcher.driver.pid).not.toBe(driverPid);
      } finally {
        await other.close();
      }
      expect((await starts(runDir("driver-killed"))).map((line) => line.kind)).toEqual(["started"]);
    }, 150_000);

    it("revives a run whose actor and worker are both gone: a new worker on the same result directory", async () => {
      const { ref } = await launcher.launch(await request("revived", { steps: 30, stepMs: 200 }));
      await waitForProgress(launcher, ref, (progress) => (progress.step ?? 0) >= 2, 60_000);
      const [first] = await starts(runDir("revived"));
      // The worker first (its actor sees it end and removes itself), as an OOM kill of the node's tree would.
      process.kill(-first!.worker_pid!, "SIGKILL");
      const lost = await waitForProgress(launcher, ref, (progress) => progress.state === "lost", 60_000);
      expect(lost.reason).toMatch(/no worker is running it/);
      expect((await launcher.launch(await request("revived", { steps: 30, stepMs: 200 }))).started).toBe(false);
      expect((await launcher.launch({ ...(await request("revived", { steps: 30, stepMs: 200 })), revive: true })).started).toBe(true);
      await waitForProgress(launcher, ref, (progress) => progress.state === "running" || progress.finished, 60_000);
      expect((await starts(runDir("revived"))).map((line) => line.kind)).toEqual(["started", "started"]);
      await launcher.cancel(ref);
    }, 150_000);

    it("shows the cluster's nodes and free GPUs in a3r hosts check, and gives the scheduler its GPUs as slots", async () => {
      const host = rayHost(ray, join(folder, "host"));
      const row = await checkHost(host);
      expect(row.problems).toEqual([]);
      expect(row.ok).toBe(true);
      expect(row.gpus).toMatch(/^2 GPUs \(\d free\), 4 CPUs \([\d.]+ free\) on 1 node: 127\.0\.0\.1 /);
      expect(row.gpuCount).toBe(2);
      expect(row.a3r).toMatch(/^yes/);
      const capacity = await resolveCapacity(host, launcher);
      expect(capacity).toMatchObject({ name: "ray-cluster", gpuIndices: [0, 1], maxRuns: 8 });
      const wrong = await checkHost({ ...host, address: "127.0.0.1:1" });
      expect(wrong.ok).toBe(false);
      expect(wrong.problems.join(" ")).toMatch(/Ray driver/);
    }, 240_000);
  });
});
