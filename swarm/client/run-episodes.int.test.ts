import type OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import { temporaryDirectory, waitForState } from "../server/server-process.test-support.ts";
import { silentLogger } from "../server/logger.ts";
import { startSwarmServer, type SwarmServer } from "../server/swarm-server.ts";
import { runEpisodes, type EpisodeTask } from "./run-episodes.ts";
import { SwarmClient } from "./swarm-client.ts";

/**
 * The generic runner against a real server: a task that fails now and then gets its
 * episodes aborted (never left for the idle reclaim), groups of num_repeat episodes share
 * a task id, and the run stops by itself when the server has finished training.
 */
let server: SwarmServer | undefined;
let directory: { path: string; remove(): Promise<void> } | undefined;
afterAll(async () => {
  await server?.close();
  await directory?.remove();
});

describe("runEpisodes", () => {
  it("aborts failed episodes, groups tasks by num_repeat, and stops when training finishes", async () => {
    directory = await temporaryDirectory("swarm-runner");
    server = await startSwarmServer({
      config: parseSwarmConfig(["port: 0", "train_batch_size: 2", "num_repeat: 3", "max_steps: 3", "save_freq: 0"].join("\n"), {
        baseDirectory: directory.path,
      }),
      logger: silentLogger,
    });
    const client = new SwarmClient({ url: server.url });
    await waitForState(client, "ENGINE.ROLLING");
    const seen = new Map<string, number>();
    let calls = 0;
    const task: EpisodeTask<{ taskId: string; seed: number }> = {
      name: "flaky",
      sampleTask: (seed) => ({ taskId: `task-${seed}`, seed }),
      async runEpisode(openai: OpenAI, instance) {
        calls += 1;
        seen.set(instance.taskId, (seen.get(instance.taskId) ?? 0) + 1);
        const answer = await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "What colour is the sky?" }], max_tokens: 2 });
        // The second call always fails, so a failure lands well before training can finish
        // even when a loaded machine lets few episodes through.
        if (calls === 2 || calls % 7 === 0) throw new Error("the task's own checker crashed");
        return { reward: (answer.choices[0]?.message.content ?? "").length % 2, isSuccess: false };
      },
    };
    const summary = await runEpisodes({ client, task, episodes: 500, concurrency: 3, seed: 100 });
    expect(summary.stoppedEarly).toContain("finished");
    expect(summary.completed + summary.failed).toBeLessThan(500);
    expect(summary.failed).toBeGreaterThan(0);
    expect(summary.outcomes.filter((outcome) => !outcome.ok).every((outcome) => outcome.error === "the task's own checker crashed")).toBe(true);
    // Every task id got num_repeat episodes, except possibly the last ones in flight.
    const counts = [...seen.values()];
    expect(counts.filter((count) => count === 3).length).toBeGreaterThanOrEqual(counts.length - 2);
    const pool = await client.poolInformation();
    expect(pool.running_episodes).toBe(0);
    expect((pool.counters as Record<string, number>).episodes_aborted).toBe(summary.failed);
    expect((await client.status()).global_step).toBe(3);
  });
});
