import type OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import itemColor, { type ItemColorTask } from "../../examples/tasks/item-color/task.ts";
import { runEpisodes, type EpisodeTask } from "../client/run-episodes.ts";
import { SwarmClient } from "../client/swarm-client.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "./logger.ts";
import { temporaryDirectory, waitForState } from "./server-process.test-support.ts";
import { startSwarmServer } from "./swarm-server.ts";

/**
 * swarm.yaml `eval_protocol` (protocol-eval.ts) against a real server and the embedded
 * engine: the evaluation measures every configuration the same way (the training
 * temperature does not reach it), the same seed gives the same measurements whatever the
 * runners and their failures, and a stop during an evaluation still records the step.
 */
const timing = new Set(["time", "step_time_s", "train_time_s", "step_time_ms"]);
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

/** item-color with half a point for any colour (reward spread from the start), random pauses and random crashes. */
function jittery(crashRate: number): EpisodeTask<ItemColorTask> {
  return {
    name: "item-color-jittery",
    sampleTask: (seed) => itemColor.sampleTask(seed),
    async runEpisode(openai: OpenAI, task) {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10));
      const outcome = await itemColor.runEpisode(openai, task);
      if (Math.random() < crashRate) throw new Error("the checker crashed");
      return { ...outcome, reward: outcome.reward + 0.5 * (outcome.logMetrics?.answered_with_a_colour ?? 0) };
    },
  };
}

async function serve(lines: string[]) {
  const directory = await temporaryDirectory("protocol-eval");
  closers.push(() => directory.remove());
  const config = [
    "port: 0",
    "train_batch_size: 2",
    "num_repeat: 4",
    "optimizer: { lr: 0.5, kl_coef: 0.001, clip: 0.2 }",
    "save_freq: 0",
    "episode_idle_timeout: 5",
    ...lines,
  ].join("\n");
  const server = await startSwarmServer({ config: parseSwarmConfig(config, { baseDirectory: directory.path }), logger: silentLogger, tickMs: 50 });
  closers.push(() => server.close());
  const client = new SwarmClient({ url: server.url });
  await waitForState(client, "ENGINE.ROLLING");
  return { server, client };
}

async function trainedCurve(lines: string[], runners: ReadonlyArray<{ concurrency: number; seed: number }>, crashRate: number) {
  const { server, client } = await serve(lines);
  const summaries = await Promise.all(
    runners.map((runner) =>
      runEpisodes({ client: new SwarmClient({ url: server.url }), task: jittery(crashRate), episodes: 2000, discardEpisodeTimeout: 5, ...runner }),
    ),
  );
  for (const summary of summaries) expect(summary.stoppedEarly).toMatch(/training has finished/);
  return (await client.metrics()).map((entry) => Object.fromEntries(Object.entries(entry).filter(([name]) => !timing.has(name))));
}

describe("fixed-protocol evaluation (eval_protocol)", () => {
  it("measures the untrained weights the same way whatever temperature the run trains at", async () => {
    const protocol = "eval_protocol: { at_steps: [0, 1], episodes: 32, sampling: { temperature: 1, top_p: 1 } }";
    const [cold, hot] = (await Promise.all(
      [0.3, 2].map((temperature) =>
        trainedCurve(
          [
            "model: { kind: embedded, seed: 5, embedded: { train_off_thread: false } }",
            "max_steps: 1",
            `sampling: { temperature: ${temperature}, top_p: 1, max_tokens: 8 }`,
            protocol,
          ],
          [{ concurrency: 4, seed: temperature === 2 ? 9 : 1 }],
          0,
        ),
      ),
    )) as [Array<Record<string, number>>, Array<Record<string, number>>];
    expect(cold.map((entry) => entry.step)).toEqual([0, 1]);
    expect(cold[0]!.protocol_eval_episodes).toBe(32);
    expect(cold[0]!.protocol_eval_reward_mean).toBeGreaterThan(0);
    // Same weights, same 32 tasks, same sampling and seeds: the same number, though the runs train differently.
    expect(hot[0]!.protocol_eval_reward_mean).toBe(cold[0]!.protocol_eval_reward_mean);
    expect(hot[1]!.protocol_eval_episodes).toBe(32);
    expect(hot[1]!.rollout_reward_mean).not.toBe(cold[1]!.rollout_reward_mean);
  }, 60_000);

  it("gives the same measurements with other runners and random crashes in deterministic mode, only at the planned steps", async () => {
    const lines = [
      "deterministic: true",
      "model: { kind: embedded, seed: 3, embedded: { train_off_thread: false } }",
      "max_steps: 3",
      "eval_protocol: { at_steps: [1], every: 3, episodes: 8 }",
    ];
    const first = await trainedCurve(
      lines,
      [
        { concurrency: 3, seed: 1 },
        { concurrency: 1, seed: 2 },
      ],
      0.1,
    );
    const second = await trainedCurve(lines, [{ concurrency: 5, seed: 40 }], 0.1);
    expect(first.map((entry) => entry.step)).toEqual([1, 2, 3]);
    expect(first.map((entry) => entry.protocol_eval_episodes)).toEqual([8, undefined, 8]);
    expect(first[2]!.protocol_eval_reward_mean).toEqual(expect.any(Number));
    expect(second).toEqual(first);
  }, 60_000);

  it("hands a train claim an eval episode while it runs, and a stop during it still records the step", async () => {
    const { server, client } = await serve([
      "model: { kind: embedded, seed: 2, embedded: { train_off_thread: false } }",
      "max_steps: 5",
      "eval_protocol: { at_steps: [1], episodes: 4, seed: 77, sampling: { temperature: 0 } }",
    ]);
    // Exactly the 8 episodes of step 1 (2 tasks x 4), then nobody plays the evaluation.
    await runEpisodes({ client, task: jittery(0), episodes: 8, concurrency: 8, seed: 1 });
    await expect.poll(() => server.coordinator.state.detail, { timeout: 10_000 }).toMatch(/evaluating the weights of step 1 on 4 fixed-protocol eval episodes/);
    expect(await client.metrics()).toEqual([]);
    const handle = await client.beginEpisode({ type: "train" });
    expect(handle.evaluating).toBe(1);
    expect(handle.slot?.taskSeed).toEqual(expect.any(Number));
    const again = await client.beginEpisode({ type: "train" });
    // Numbered episodes of one evaluation: different tasks.
    expect(again.slot?.taskSeed).not.toBe(handle.slot?.taskSeed);
    await client.endEpisode("t", handle.episodeUuid, { reward: 0.75 });
    await server.coordinator.stop("the test stops it mid-evaluation");
    const [record] = server.coordinator.metrics;
    expect(record).toMatchObject({ step: 1, protocol_eval_episodes: 1, protocol_eval_reward_mean: 0.75, protocol_eval_incomplete: 1 });
  }, 60_000);
});
