import { execFile, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { SwarmClient } from "../../client/index.ts";
import { startServerProcess, temporaryDirectory, waitForState, type ServerProcess } from "../../server/server-process.test-support.ts";
import { slowTests, slowTierNote } from "../../../test-support/slow-tests.ts";

/**
 * swarm.yaml `deterministic: true` (swarm/engines/README.md, "Deterministic mode"): the same
 * model.seed gives exactly the same per-step curves whatever the load. Each run is a real
 * `a3r swarm serve` with the embedded engine and real `a3r swarm client item-color`
 * processes; the second run of the seed has other client processes (count, concurrency and
 * their own --seed all differ) and CPU burners beside it, so episodes arrive in another
 * order. C2 on item-color's 12 task ids also takes the strategy's "not ready yet" path (two
 * groups with one task id). A different seed must give a different curve.
 */
const cli = fileURLToPath(new URL("../../../bin/a3r.js", import.meta.url));
const execute = promisify(execFile);
const steps = 6;
/** Wall-clock and host-dependent fields; everything else a step reports must match exactly. */
const timing = new Set(["time", "step_time_s", "train_time_s", "step_time_ms"]);

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

interface ClientSpec {
  concurrency: number;
  seed: number;
}

async function trainedCurve(seed: number, clients: readonly ClientSpec[]): Promise<Array<Record<string, number>>> {
  const directory = await temporaryDirectory("deterministic");
  cleanups.push(() => directory.remove());
  const server: ServerProcess = await startServerProcess(
    directory.path,
    [
      "port: 0",
      "deterministic: true",
      `model: { kind: embedded, seed: ${seed} }`,
      "train_batch_size: 4",
      "num_repeat: 4",
      "swarm_mode_sample_collection_method: rollout_until_finish_enough_tasks",
      "optimizer: { lr: 0.5, kl_coef: 0.001, clip: 0.2 }",
      "save_freq: 0",
      `max_steps: ${steps}`,
      `experiment_dir: ${join(directory.path, "experiment")}`,
    ].join("\n"),
  );
  cleanups.push(() => server.kill());
  const client = new SwarmClient({ url: server.url });
  await waitForState(client, "ENGINE.ROLLING");
  const runs = clients.map((spec) =>
    execute(
      process.execPath,
      [
        cli,
        "swarm",
        "client",
        "item-color",
        "--url",
        server.url,
        "--episodes",
        "5000",
        "--concurrency",
        String(spec.concurrency),
        "--seed",
        String(spec.seed),
        "--json",
      ],
      { env: { ...process.env, NO_COLOR: "1" } },
    ),
  );
  const summaries = (await Promise.all(runs)).map((result) => JSON.parse(result.stdout) as { completed: number; stoppedEarly?: string });
  for (const summary of summaries) expect(summary.stoppedEarly).toMatch(/training has finished/);
  const metrics = await client.metrics();
  await server.stop();
  return metrics.map((entry) => Object.fromEntries(Object.entries(entry).filter(([name]) => !timing.has(name))));
}

/** Busy loops, one per core: the machine's load changes how the clients' episodes interleave. */
function burnCpu(count: number): ChildProcess[] {
  return Array.from({ length: count }, () => {
    const child = spawn(process.execPath, ["-e", "for (;;) Math.sqrt(Math.random())"], { stdio: "ignore" });
    cleanups.push(async () => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    return child;
  });
}

describe("deterministic mode", () => {
  it.skipIf(!slowTests)(
    `the same seed gives identical per-step curves under another load and other clients; another seed differs${slowTierNote}`,
    async () => {
      const first = await trainedCurve(5, [
        { concurrency: 4, seed: 1 },
        { concurrency: 2, seed: 2 },
      ]);
      const burners = burnCpu(2);
      const [second, otherSeed] = await Promise.all([
        trainedCurve(5, [
          { concurrency: 1, seed: 70 },
          { concurrency: 3, seed: 80 },
          { concurrency: 8, seed: 90 },
        ]),
        trainedCurve(6, [{ concurrency: 4, seed: 1 }]),
      ]);
      for (const burner of burners) burner.kill("SIGKILL");

      expect(first).toHaveLength(steps);
      expect(second).toEqual(first);
      // Two groups with one task id in a round: C2 trains one, the other waits, the round grew.
      expect(first.some((entry) => entry.deterministic_next_episode! > 16 * entry.step!)).toBe(true);
      // The curve is not constant by construction: the policy learns and the loss moves.
      expect(new Set(first.map((entry) => entry.loss)).size).toBeGreaterThan(1);
      expect(otherSeed).toHaveLength(steps);
      expect(otherSeed.map((entry) => entry.loss)).not.toEqual(first.map((entry) => entry.loss));
    },
    240_000,
  );
});
