import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { SwarmClient } from "../client/index.ts";
import { startServerProcess, temporaryDirectory, waitForState, type ServerProcess } from "./server-process.test-support.ts";

/**
 * End to end, as a person would run it: `a3r swarm serve` as a child process and two
 * `a3r swarm client item-color` processes at once (real openai SDK clients, several
 * episodes in flight each). The embedded policy must learn: chance on item-color is about
 * 3 %, so a late-step reward far above it can only come from the optimizer steps.
 */
const cli = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));
const run = promisify(execFile);
let server: ServerProcess | undefined;
let directory: { path: string; remove(): Promise<void> } | undefined;

afterAll(async () => {
  await server?.kill();
  await directory?.remove();
});

describe("swarm training end to end", () => {
  it.skipIf(!slowTests)(
    `learns the single-turn task with two concurrent client processes${slowTierNote}`,
    async () => {
      directory = await temporaryDirectory("swarm-training");
      const experimentDir = join(directory.path, "experiment");
      server = await startServerProcess(
        directory.path,
        // C2 with 8 groups of 8: the in-process learning test reaches 0.8 in about 30 steps
        // with these numbers, so ~40 steps (2,600 episodes) leave a wide margin for the
        // nondeterministic episode order of two concurrent clients.
        [
          "port: 0",
          "train_batch_size: 8",
          "num_repeat: 8",
          "swarm_mode_sample_collection_method: rollout_until_finish_enough_tasks",
          "save_freq: 0",
          `experiment_dir: ${experimentDir}`,
        ].join("\n"),
      );
      const client = new SwarmClient({ url: server.url });
      await waitForState(client, "ENGINE.ROLLING");

      const clients = [1, 2].map((seed) =>
        run(
          process.execPath,
          [cli, "swarm", "client", "item-color", "--url", server!.url, "--episodes", "1300", "--concurrency", "8", "--seed", String(seed * 1000), "--json"],
          { env: { ...process.env, NO_COLOR: "1" } },
        ),
      );
      // The optimizer step runs off the event loop: status keeps answering during training.
      let polling = true;
      let slowestStatusMs = 0;
      const states = new Set<string>();
      const poller = (async () => {
        while (polling) {
          const sent = Date.now();
          states.add((await client.status()).engine_status);
          slowestStatusMs = Math.max(slowestStatusMs, Date.now() - sent);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const finished = await Promise.all(clients);
      polling = false;
      await poller;
      expect(slowestStatusMs).toBeLessThan(2000);
      expect(states.has("ENGINE.ROLLING")).toBe(true);
      const summaries = finished.map((result) => JSON.parse(result.stdout) as { completed: number; failed: number; rewardMean: number });
      for (const summary of summaries) {
        expect(summary.failed).toBe(0);
        expect(summary.completed).toBe(1300);
      }

      const metrics = await client.metrics();
      expect(metrics.length).toBeGreaterThanOrEqual(35);
      // Measure the trained policy on eval episodes (answered, never trained on).
      const evaluation = await run(process.execPath, [
        cli,
        "swarm",
        "client",
        "item-color",
        "--url",
        server.url,
        "--episodes",
        "96",
        "--concurrency",
        "8",
        "--seed",
        "99",
        "--eval",
        "--json",
      ]);
      const evalSummary = JSON.parse(evaluation.stdout) as { completed: number; rewardMean: number };
      expect(evalSummary.completed).toBe(96);
      expect(evalSummary.rewardMean).toBeGreaterThan(0.5); // chance is about 0.03
      for (const entry of metrics) {
        expect(entry.episodes).toBe(64);
        expect(entry.merge_ratio).toBeLessThanOrEqual(1);
      }
      // Every batched episode was rewarded at or before its step, so the rollout counts
      // (every rewarded train episode, batched or not) cover at least all batches.
      const rolloutEpisodes = metrics.reduce((sum, entry) => sum + entry.rollout_episodes!, 0);
      expect(rolloutEpisodes).toBeGreaterThanOrEqual(64 * metrics.length);
      // The policy's level shows in the rollouts.
      const levels = metrics.filter((entry) => entry.rollout_reward_mean !== undefined).map((entry) => entry.rollout_reward_mean!);
      expect(Math.max(...levels.slice(-3))).toBeGreaterThan(Math.max(...levels.slice(0, 3)));
      const prometheus = await (await fetch(`${server.url}/metrics/prometheus`)).text();
      expect(prometheus).toContain('swarm_engine_state{state="ENGINE.ROLLING"} 1');
      expect(prometheus).toMatch(/swarm_global_step \d+/);

      // Checkpoint on stop (save_freq 0 means no periodic checkpoint).
      expect(await server.stop()).toBe(0);
    },
    240_000,
  );
});
