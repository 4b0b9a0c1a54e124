import type OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import itemColor, { type ItemColorTask } from "../../../examples/tasks/item-color/task.ts";
import { runEpisodes, type EpisodeTask } from "../../client/run-episodes.ts";
import { SwarmClient } from "../../client/swarm-client.ts";
import { parseSwarmConfig } from "../../config/config.ts";
import { silentLogger } from "../../server/logger.ts";
import { temporaryDirectory, waitForState } from "../../server/server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "../../server/swarm-server.ts";

/**
 * The fast half of deterministic mode's proof (deterministic.int.test.ts, slow tier, runs
 * separate processes under CPU burners): one process, a real server and two runners whose
 * episodes are delayed at random and fail at random (aborted, so the server plays those
 * numbers again). Arrival order, which runner plays what, and the failures all differ
 * between the runs; the curves may not.
 */
const steps = 3;
const timing = new Set(["time", "step_time_s", "train_time_s", "step_time_ms"]);
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

/**
 * item-color, with a random pause before and after the policy call and a random crash. Any
 * colour earns half a point, so GRPO has reward spread (and the loss moves) from step 1.
 */
const jittery: EpisodeTask<ItemColorTask> = {
  name: "item-color-jittery",
  sampleTask: (seed) => itemColor.sampleTask(seed),
  async runEpisode(openai: OpenAI, task) {
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 15));
    const outcome = await itemColor.runEpisode(openai, task);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 15));
    if (Math.random() < 0.1) throw new Error("the checker crashed");
    return { ...outcome, reward: outcome.reward + 0.5 * (outcome.logMetrics?.answered_with_a_colour ?? 0) };
  },
};

async function curve(seed: number, runners: ReadonlyArray<{ concurrency: number; seed: number }>): Promise<Array<Record<string, number>>> {
  const directory = await temporaryDirectory("deterministic-in-process");
  closers.push(() => directory.remove());
  const config = [
    "port: 0",
    "deterministic: true",
    // The optimizer step in process: the worker thread's copy is the slow tier's.
    `model: { kind: embedded, seed: ${seed}, embedded: { train_off_thread: false } }`,
    "train_batch_size: 2",
    "num_repeat: 4",
    "optimizer: { lr: 0.5, kl_coef: 0.001, clip: 0.2 }",
    "save_freq: 0",
    `max_steps: ${steps}`,
  ].join("\n");
  const server: SwarmServer = await startSwarmServer({ config: parseSwarmConfig(config, { baseDirectory: directory.path }), logger: silentLogger });
  closers.push(() => server.close());
  const client = new SwarmClient({ url: server.url });
  await waitForState(client, "ENGINE.ROLLING");
  const summaries = await Promise.all(
    runners.map((runner) => runEpisodes({ client: new SwarmClient({ url: server.url }), task: jittery, episodes: 1000, ...runner })),
  );
  for (const summary of summaries) expect(summary.stoppedEarly).toMatch(/training has finished/);
  const metrics = await client.metrics();
  return metrics.map((entry) => Object.fromEntries(Object.entries(entry).filter(([name]) => !timing.has(name))));
}

describe("deterministic mode in one process", () => {
  it("gives the same per-step curves with other runners, random delays and random aborts; another seed differs", async () => {
    const first = await curve(3, [
      { concurrency: 3, seed: 1 },
      { concurrency: 1, seed: 2 },
    ]);
    const [second, otherSeed] = await Promise.all([curve(3, [{ concurrency: 6, seed: 50 }]), curve(4, [{ concurrency: 2, seed: 1 }])]);
    expect(first).toHaveLength(steps);
    expect(second).toEqual(first);
    expect(first.some((entry) => entry.loss !== 0)).toBe(true);
    expect(otherSeed).toHaveLength(steps);
    expect(otherSeed.map((entry) => [entry.loss, entry.kl])).not.toEqual(first.map((entry) => [entry.loss, entry.kl]));
  }, 60_000);
});
