import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { newRunStatus } from "../campaign/index.ts";
import { LocalLauncher } from "../hosts/local/local-launcher.ts";
import { QueueLauncher } from "../hosts/queue/queue-launcher.ts";
import { recordKeys } from "../hosts/queue/queue-records.ts";
import { SshConnection } from "../hosts/ssh/ssh-connection.ts";
import { SshLauncher } from "../hosts/ssh/ssh-launcher.ts";
import { WorkerDaemon } from "../hosts/queue/worker-daemon.ts";
import type { LaunchRequest, RunRef } from "../hosts/port/launcher.ts";
import { instantA3rCommand, writeFixtureBlueprint } from "../test-support/fixture-blueprint.ts";
import { startRedisServer } from "../test-support/redis-server.ts";
import { startSshServer } from "../test-support/sshd-server.ts";
import type { Benchmark, BenchReport, BenchRow } from "./report.ts";

/**
 * Dispatch cost, measured side by side in one run:
 *
 * 1. Queue: N blueprints whose runs finish at once (test-support/instant-worker.sh) go
 *    through a real redis-server to 50 in-process worker daemons (each its own BullMQ
 *    Worker): launches per second and end-to-end time (last result back in Redis), next to
 *    the same N through the local launcher (last finish.flag written).
 * 2. SSH polling: one poll cycle over 200 runs on one host (a real sshd): one reused
 *    connection answering the whole cycle with one command (pollMany, what the dispatcher
 *    does), the same connection with one command per run (8 channels), and a new
 *    connection per poll (8 at a time). The 200 runs are
 *    result folders with status and metrics and one live process group, so the poll does
 *    exactly its real work without 200 trainers competing for the CPU.
 *
 * A3R_BENCH_DISPATCH_RUNS scales part 1 (default 1000).
 */
const runs = Number(process.env.A3R_BENCH_DISPATCH_RUNS ?? 1000);
const daemons = 50;
const polledRuns = 200;

async function pool<T>(items: T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

async function blueprints(folder: string, campaign: string, count: number): Promise<LaunchRequest[]> {
  const requests: LaunchRequest[] = [];
  for (let index = 0; index < count; index += 1) {
    const id = `bench-${index}`;
    const blueprintFile = await writeFixtureBlueprint(folder, { id, campaign });
    requests.push({ campaign, blueprintId: id, blueprintFile, gpuIndices: [], resultDir: join(folder, "results", id) });
  }
  return requests;
}

async function queueDispatch(folder: string): Promise<{ launchesPerSecond: number; endToEndMs: number }> {
  const redis = await startRedisServer();
  const queue = "bench";
  const started: WorkerDaemon[] = [];
  try {
    for (let index = 0; index < daemons; index += 1) {
      started.push(
        await WorkerDaemon.start({
          redisUrl: redis.url,
          queue,
          name: `daemon-${index}`,
          gpus: 0,
          maxRuns: 8,
          workdir: join(folder, `daemon-${index}`),
          a3r: instantA3rCommand,
          reportIntervalMs: 100,
        }),
      );
    }
    const launcher = await QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue });
    const requests = await blueprints(folder, "bench-queue", runs);
    const client = new Redis(redis.url);
    const keys = recordKeys({ queue, prefix: "bull" });
    const t0 = performance.now();
    await pool(requests, 32, async (request) => {
      await launcher.launch(request);
    });
    let launchedAt = 0;
    for (;;) {
      const launched = started.reduce((sum, daemon) => sum + daemon.launchesStarted, 0);
      if (launched >= runs && launchedAt === 0) launchedAt = performance.now();
      const pipeline = client.pipeline();
      for (const request of requests) pipeline.hget(keys.run(request as RunRef), "finished");
      const finished = ((await pipeline.exec()) ?? []).filter(([, value]) => value === "1").length;
      if (finished >= runs) break;
      if (performance.now() - t0 > 150_000) throw new Error(`queue bench: only ${finished}/${runs} runs finished in 150 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const endToEndMs = performance.now() - t0;
    client.disconnect();
    await launcher.close();
    return { launchesPerSecond: (runs / ((launchedAt || performance.now()) - t0)) * 1000, endToEndMs };
  } finally {
    await Promise.all(started.map((daemon) => daemon.stop()));
    await redis.stop();
  }
}

async function localDispatch(folder: string): Promise<{ launchesPerSecond: number; endToEndMs: number }> {
  const launcher = new LocalLauncher({ host: "here", workdir: join(folder, "local-host"), a3r: instantA3rCommand });
  const requests = await blueprints(folder, "bench-local", runs);
  const t0 = performance.now();
  await pool(requests, 32, async (request) => {
    await launcher.launch(request);
  });
  const launchedMs = performance.now() - t0;
  await pool(requests, 32, async (request) => {
    while (!(await launcher.poll(request)).finished) await new Promise((resolve) => setTimeout(resolve, 50));
  });
  return { launchesPerSecond: (runs / launchedMs) * 1000, endToEndMs: performance.now() - t0 };
}

async function sshPolling(folder: string): Promise<{ batchedMs: number; perRunMs: number; freshMs: number }> {
  const sshd = await startSshServer();
  const workdir = join(folder, "ssh-host");
  // One live process group stands in for the 200 runs' groups.
  const sleeper = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
  const refs: RunRef[] = [];
  try {
    for (let index = 0; index < polledRuns; index += 1) {
      const ref = { campaign: "bench-ssh", blueprintId: `poll-${index}` };
      refs.push(ref);
      const dir = join(workdir, ref.campaign, ref.blueprintId);
      await mkdir(join(dir, "result"), { recursive: true });
      await writeFile(
        join(dir, "launch.json"),
        JSON.stringify({ ...ref, host: "box", resultDir: join(dir, "result"), gpuIndices: [0], pgid: sleeper.pid, launchedAt: new Date().toISOString() }),
      );
      await writeFile(join(dir, "pgid"), `${sleeper.pid}\n`);
      await writeFile(
        join(dir, "result", "status.json"),
        JSON.stringify(newRunStatus({ state: "running", attempt: 1, step: 40, heartbeatAt: new Date().toISOString() })),
      );
      const lines = Array.from({ length: 40 }, (_, step) => JSON.stringify({ step: step + 1, time: new Date().toISOString(), reward_mean: step / 40 }));
      await writeFile(join(dir, "result", "metrics.jsonl"), `${lines.join("\n")}\n`);
    }
    const options = {
      name: "box",
      host: "127.0.0.1",
      port: sshd.port,
      username: sshd.user,
      identityFiles: [sshd.userKeyFile],
      hostKey: sshd.hostKeyFingerprint,
    };
    const shared = new SshLauncher({ host: "box", workdir, a3r: "a3r", connection: new SshConnection(options) });
    await shared.poll(refs[0]!); // connect outside the measurement, as a long-lived leader would be
    const cycles: number[] = [];
    for (let cycle = 0; cycle < 3; cycle += 1) {
      const t0 = performance.now();
      const results = await shared.pollMany(refs);
      cycles.push(performance.now() - t0);
      if (results.some((progress) => progress.state !== "running")) throw new Error("ssh bench: a poll did not see its run running");
    }
    const t1 = performance.now();
    const single = await Promise.all(refs.map((ref) => shared.poll(ref)));
    const perRunMs = performance.now() - t1;
    if (single.some((progress) => progress.state !== "running")) throw new Error("ssh bench: a poll did not see its run running");
    await shared.close();
    const t0 = performance.now();
    await pool(refs, 8, async (ref) => {
      const fresh = new SshLauncher({ host: "box", workdir, a3r: "a3r", connection: new SshConnection(options) });
      try {
        await fresh.poll(ref);
      } finally {
        await fresh.close();
      }
    });
    const freshMs = performance.now() - t0;
    return { batchedMs: cycles.sort((a, b) => a - b)[1]!, perRunMs, freshMs };
  } finally {
    sleeper.kill("SIGKILL");
    await sshd.stop();
  }
}

const benchmark: Benchmark = {
  title: "hosts: dispatch through the queue and the local launcher; ssh polling with and without connection reuse",
  async run(): Promise<BenchReport> {
    const folder = await mkdtemp(join(tmpdir(), "a3r-bench-dispatch-"));
    try {
      const queue = await queueDispatch(folder);
      const local = await localDispatch(folder);
      const ssh = await sshPolling(folder);
      const rows: BenchRow[] = [
        { name: `queue: launches/s (${runs} runs, ${daemons} daemons)`, value: queue.launchesPerSecond, unit: "launches/s" },
        { name: "queue: end-to-end, last result back in Redis", value: queue.endToEndMs / 1000, unit: "s" },
        { name: `local launcher: launches/s (${runs} runs)`, value: local.launchesPerSecond, unit: "launches/s" },
        { name: "local launcher: end-to-end, last finish.flag", value: local.endToEndMs / 1000, unit: "s" },
        { name: "queue end-to-end / local end-to-end", value: queue.endToEndMs / local.endToEndMs, unit: "x" },
        { name: `ssh: poll cycle, ${polledRuns} runs, one connection, one command (pollMany)`, value: ssh.batchedMs, unit: "ms" },
        { name: `ssh: poll cycle, ${polledRuns} runs, one connection, one command per run (8 channels)`, value: ssh.perRunMs, unit: "ms" },
        { name: `ssh: poll cycle, ${polledRuns} runs, new connection per poll (8 at a time)`, value: ssh.freshMs, unit: "ms" },
        { name: "ssh: new connection per poll / reused connection (same commands)", value: ssh.freshMs / ssh.perRunMs, unit: "x" },
        { name: "ssh: new connection per poll / reused connection with pollMany", value: ssh.freshMs / ssh.batchedMs, unit: "x" },
      ];
      const notes = [
        "runs finish at once (instant-worker.sh): this measures dispatch, not training",
        "both dispatch paths share the machine's 2 cores with the daemons, redis-server and the spawned runs",
        "ssh on localhost: a handshake costs no network round trips here, and one sshd process serves all channels of a connection, so reuse alone gains little; on a real network each new connection adds several round trips and a key exchange",
      ];
      if (runs !== 1000) notes.push(`scaled to ${runs} runs by A3R_BENCH_DISPATCH_RUNS`);
      return { title: benchmark.title, rows, notes };
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  },
};

export default benchmark;
