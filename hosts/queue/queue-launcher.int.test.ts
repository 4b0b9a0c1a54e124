import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { Queue } from "bullmq";
import { auditResultDir, readEvents } from "../../campaign/index.ts";
import { isA3rError } from "../../core/errors.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { startRedisServer, type RedisServerHandle } from "../../test-support/redis-server.ts";
import { describeLauncherConformance, waitForProgress } from "../../test-support/launcher-conformance.ts";
import { QueueLauncher } from "./queue-launcher.ts";
import { recordKeys } from "./queue-records.ts";
import { WorkerDaemon } from "./worker-daemon.ts";

// One real redis-server for the file; every test uses its own queue name (a fresh namespace).
let redis: RedisServerHandle;
let queueNumber = 0;
const freshQueue = () => `q${process.pid}-${(queueNumber += 1)}`;

beforeAll(async () => {
  redis = await startRedisServer();
});

afterAll(async () => {
  await redis?.stop();
});

describeLauncherConformance("queue", async () => {
  const workdir = await mkdtemp(join(tmpdir(), "a3r-queue-node-"));
  const queue = freshQueue();
  const daemon = await WorkerDaemon.start({ redisUrl: redis.url, queue, gpus: 0, maxRuns: 4, workdir, a3r: fixtureA3rCommand, reportIntervalMs: 150 });
  const launcher = await QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue });
  return {
    launcher,
    reopen: () => QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue }),
    cleanup: async () => {
      await launcher.close();
      await daemon.stop();
      await rm(workdir, { recursive: true, force: true });
    },
  };
});

describe("queue backend with real redis and worker daemons", () => {
  it("two daemons with 2 GPU slots each run 6 blueprints without exceeding a slot; all results come back", async () => {
    const queue = freshQueue();
    const folder = await mkdtemp(join(tmpdir(), "a3r-queue-slots-"));
    const daemons = await Promise.all(
      ["node-a", "node-b"].map(async (name) =>
        WorkerDaemon.start({ redisUrl: redis.url, queue, name, gpus: 2, workdir: join(folder, name), a3r: fixtureA3rCommand, reportIntervalMs: 150 }),
      ),
    );
    const launcher = await QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue });
    try {
      const refs = [];
      for (let index = 0; index < 6; index += 1) {
        const id = `slot-${index}`;
        const blueprintFile = await writeFixtureBlueprint(folder, { id, campaign: "slots", gpus: 1, steps: 4, stepMs: 150 });
        const outcome = await launcher.launch({ campaign: "slots", blueprintId: id, blueprintFile, gpuIndices: [], resultDir: join(folder, "unused") });
        expect(outcome.started).toBe(true);
        refs.push(outcome.ref);
      }
      for (const ref of refs) {
        const progress = await waitForProgress(launcher, ref, (current) => current.finished, 60_000);
        expect(progress.state).toBe("succeeded");
        expect(progress.gpuIndices).toHaveLength(1);
        const destination = join(folder, "results", ref.blueprintId);
        expect((await launcher.fetch(ref, destination)).complete).toBe(true);
        expect((await auditResultDir(destination)).filter((finding) => finding.severity === "error")).toEqual([]);
        const launches = (await readEvents(join(destination, "events.jsonl"))).events.filter((event) => event.kind === "run.launched");
        expect(launches).toHaveLength(1);
        expect(["0", "1"]).toContain(launches[0]?.gpus);
      }
      expect(daemons.map((daemon) => daemon.peakRuns).every((peak) => peak <= 2)).toBe(true);
      expect(daemons.reduce((sum, daemon) => sum + daemon.launchesStarted, 0)).toBe(6);
    } finally {
      await launcher.close();
      await Promise.all(daemons.map((daemon) => daemon.stop()));
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("ignores a duplicate dispatch", async () => {
    const queue = freshQueue();
    const folder = await mkdtemp(join(tmpdir(), "a3r-queue-dup-"));
    const launcher = await QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue });
    const daemon = await WorkerDaemon.start({
      redisUrl: redis.url,
      queue,
      gpus: 1,
      workdir: join(folder, "node"),
      a3r: fixtureA3rCommand,
      reportIntervalMs: 150,
    });
    try {
      const blueprintFile = await writeFixtureBlueprint(folder, { id: "dup", campaign: "dups", gpus: 1, steps: 2, stepMs: 100 });
      const request = { campaign: "dups", blueprintId: "dup", blueprintFile, gpuIndices: [], resultDir: join(folder, "unused") };
      const outcomes = await Promise.all([launcher.launch(request), launcher.launch(request), launcher.launch(request)]);
      expect(outcomes.filter((outcome) => outcome.started)).toHaveLength(1);
      await waitForProgress(launcher, outcomes[0]!.ref, (current) => current.finished);
      expect((await launcher.launch(request)).started).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(daemon.launchesStarted).toBe(1);
    } finally {
      await launcher.close();
      await daemon.stop();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("never launches a run another daemon has claimed (a job redelivered after its daemon died mid-launch)", async () => {
    const queue = freshQueue();
    const folder = await mkdtemp(join(tmpdir(), "a3r-queue-claim-"));
    const admin = new Redis(redis.url);
    // node-a claimed the run, then died before completing the BullMQ job.
    await admin.set(recordKeys({ queue, prefix: "bull" }).claim({ campaign: "claims", blueprintId: "claimed" }), "node-a");
    const launcher = await QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue });
    const daemon = await WorkerDaemon.start({
      redisUrl: redis.url,
      queue,
      name: "node-b",
      gpus: 1,
      workdir: join(folder, "node-b"),
      a3r: fixtureA3rCommand,
      reportIntervalMs: 150,
    });
    try {
      const blueprintFile = await writeFixtureBlueprint(folder, { id: "claimed", campaign: "claims", gpus: 1 });
      const { ref } = await launcher.launch({ campaign: "claims", blueprintId: "claimed", blueprintFile, gpuIndices: [], resultDir: join(folder, "unused") });
      const queueHandle = new Queue(queue, { connection: { url: redis.url } });
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && (await (await queueHandle.getJob(`${ref.campaign}+${ref.blueprintId}`))?.getState()) !== "completed") {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const job = await queueHandle.getJob(`${ref.campaign}+${ref.blueprintId}`);
      expect(job?.returnvalue).toEqual({ daemon: "node-a", duplicate: true });
      await queueHandle.close();
      expect(daemon.launchesStarted).toBe(0);
      expect(daemon.activeRuns).toEqual([]);
    } finally {
      admin.disconnect();
      await launcher.close();
      await daemon.stop();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("refuses to run against a Redis that may evict keys", async () => {
    const admin = new Redis(redis.url);
    await admin.config("SET", "maxmemory-policy", "allkeys-lru");
    try {
      const error = await WorkerDaemon.start({ redisUrl: redis.url, queue: freshQueue(), gpus: 1, workdir: tmpdir(), a3r: "true" }).then(
        (daemon) => daemon.stop(),
        (caught: unknown) => caught,
      );
      expect(isA3rError(error, "REDIS_POLICY_INVALID")).toBe(true);
      expect((error as Error).message).toContain("allkeys-lru");
    } finally {
      await admin.config("SET", "maxmemory-policy", "noeviction");
      admin.disconnect();
    }
  });

  it("fails fast with a clear error when Redis is unreachable", async () => {
    const started = Date.now();
    const error = await QueueLauncher.open({ host: "cluster", redisUrl: "redis://127.0.0.1:1" }).then(
      (launcher) => launcher.close(),
      (caught: unknown) => caught,
    );
    expect(isA3rError(error, "REDIS_UNREACHABLE")).toBe(true);
    expect(Date.now() - started).toBeLessThan(8000);
  });
});
