import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../../campaign/index.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { stopProcess } from "../../test-support/free-port.ts";
import { startRedisServer, type RedisServerHandle } from "../../test-support/redis-server.ts";
import { waitForProgress } from "../../test-support/launcher-conformance.ts";
import { isGroupAlive } from "../../core/process-group.ts";
import { QueueLauncher } from "./queue-launcher.ts";

const cli = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));
let redis: RedisServerHandle;
let folder: string;

beforeAll(async () => {
  redis = await startRedisServer();
  folder = await mkdtemp(join(tmpdir(), "a3r-daemon-kill-"));
});

afterAll(async () => {
  await redis?.stop();
  await rm(folder, { recursive: true, force: true });
});

/** Starts `a3r hosts daemon` as its own process and resolves once it says it is ready. */
function startDaemon(queue: string, workdir: string): Promise<{ child: ChildProcess; ready: string }> {
  const child = spawn(
    process.execPath,
    [
      cli,
      "hosts",
      "daemon",
      "--redis",
      redis.url,
      "--queue",
      queue,
      "--gpus",
      "1",
      "--workdir",
      workdir,
      "--name",
      "node-k",
      "--a3r",
      fixtureA3rCommand,
      "--report-interval",
      "150",
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon not ready in 30 s: ${output}`)), 30_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = /daemon .* ready: .*/.exec(output);
      if (line) {
        clearTimeout(timer);
        resolve({ child, ready: line[0] });
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => reject(new Error(`daemon exited with ${code}: ${output}`)));
  });
}

describe("worker daemon killed with SIGKILL mid-run", () => {
  it("re-attaches after a restart, never launches a run twice, and takes queued work afterwards", async () => {
    const queue = `kill${process.pid}`;
    const workdir = join(folder, "node");
    const launcher = await QueueLauncher.open({ host: "cluster", redisUrl: redis.url, queue });
    let daemon = await startDaemon(queue, workdir);
    try {
      expect(daemon.ready).toContain("re-attached to 0 run(s)");
      const long = await writeFixtureBlueprint(folder, { id: "long-run", campaign: "kills", gpus: 1, steps: 25, stepMs: 150 });
      const next = await writeFixtureBlueprint(folder, { id: "next-run", campaign: "kills", gpus: 1, steps: 2, stepMs: 100 });
      const first = await launcher.launch({
        campaign: "kills",
        blueprintId: "long-run",
        blueprintFile: long,
        gpuIndices: [],
        resultDir: join(folder, "unused"),
      });
      const running = await waitForProgress(launcher, first.ref, (progress) => progress.state === "running" && (progress.step ?? 0) >= 2);

      daemon.child.kill("SIGKILL");
      await new Promise((resolve) => daemon.child.once("exit", resolve));
      // The run is detached from the daemon: it keeps going without it.
      const pgid = JSON.parse(readFileSync(join(workdir, "runs", "kills", "long-run", "launch.json"), "utf8")).pgid as number;
      expect(isGroupAlive(pgid)).toBe(true);
      // Work queued while the daemon is down waits in Redis; a repeated dispatch adds nothing.
      expect(
        (await launcher.launch({ campaign: "kills", blueprintId: "long-run", blueprintFile: long, gpuIndices: [], resultDir: join(folder, "unused") })).started,
      ).toBe(false);
      const second = await launcher.launch({
        campaign: "kills",
        blueprintId: "next-run",
        blueprintFile: next,
        gpuIndices: [],
        resultDir: join(folder, "unused"),
      });
      expect(second.started).toBe(true);

      daemon = await startDaemon(queue, workdir);
      expect(daemon.ready).toContain("re-attached to 1 run(s)");
      const finished = await waitForProgress(launcher, first.ref, (progress) => progress.finished, 30_000);
      expect(finished.state).toBe("succeeded");
      expect(finished.step).toBeGreaterThan(running.step ?? 0);
      const afterwards = await waitForProgress(launcher, second.ref, (progress) => progress.finished, 30_000);
      expect(afterwards.state).toBe("succeeded");

      for (const id of ["long-run", "next-run"]) {
        const destination = join(folder, "results", id);
        expect((await launcher.fetch({ campaign: "kills", blueprintId: id }, destination)).complete).toBe(true);
        const launches = (await readEvents(join(destination, "events.jsonl"))).events.filter((event) => event.kind === "run.launched");
        expect(launches).toHaveLength(1);
      }
      // The one GPU was never shared: the second run started after the first had finished.
      const firstEnd = Date.parse(finished.heartbeatAt!);
      expect(Date.parse(afterwards.startedAt!)).toBeGreaterThanOrEqual(firstEnd);
    } finally {
      await launcher.close();
      await stopProcess(daemon.child);
    }
  });
});
