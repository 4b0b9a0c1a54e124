import { mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { SwarmClient, SwarmRequestError } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { temporaryDirectory, waitFor, waitForState } from "./server-process.test-support.ts";
import { silentLogger } from "./logger.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * The server in-process with the embedded engine: agreement strategies close a step only
 * when clients agree, eval episodes never reach the pool, and checkpoints can be saved and
 * resumed through the control endpoints without losing the step count.
 */
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(lines: string[]): Promise<{ server: SwarmServer; client: SwarmClient }> {
  const directory = await temporaryDirectory("swarm-strategies");
  cleanups.push(directory.remove);
  const server = await startSwarmServer({
    config: parseSwarmConfig(["port: 0", ...lines].join("\n"), { baseDirectory: directory.path }),
    logger: silentLogger,
  });
  cleanups.push(() => server.close());
  const client = new SwarmClient({ url: server.url });
  await waitForState(client, "ENGINE.ROLLING");
  return { server, client };
}

async function playOne(client: SwarmClient, taskId: string, reward: number, type: "train" | "eval" = "train"): Promise<void> {
  const episode = await client.beginEpisode({ type });
  await fetch(`${episode.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${episode.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: `What colour is the ${taskId}?` }], max_tokens: 2 }),
  });
  await client.endEpisode(taskId, episode.episodeUuid, { reward });
}

describe("agreement strategies", () => {
  it("C4 waits for every active client, then trains on the whole pool", async () => {
    const { client } = await serve(["swarm_mode_sample_collection_method: rollout_until_all_clients_agree_sync_weight", "save_freq: 0"]);
    const other = new SwarmClient({ url: client.url });
    await playOne(client, "sky", 1);
    await playOne(other, "sky", 0);
    await playOne(other, "apple", 1);
    await client.agreeSyncWeight();
    const pool = await client.poolInformation();
    expect(pool.agreed_clients).toBe(1);
    expect(pool.active_clients).toBe(2);
    expect((await client.status()).global_step).toBe(0);
    await other.agreeSyncWeight();
    await waitFor("step 1", async () => ((await client.status()).global_step === 1 ? true : undefined));
    const metrics = await client.metrics();
    expect(metrics[0]!.episodes).toBe(3);
    // Agreements are per step.
    expect((await client.poolInformation()).agreed_clients).toBe(0);
  });

  it("C5 trains as soon as any active client agrees; eval episodes are answered but never pooled", async () => {
    const { client } = await serve(["swarm_mode_sample_collection_method: rollout_until_any_client_agrees_sync_weight", "save_freq: 0"]);
    await playOne(client, "snow", 1, "eval");
    await playOne(client, "snow", 0, "eval");
    expect((await client.poolInformation()).completed_episodes).toBe(0);
    await playOne(client, "snow", 1);
    await client.agreeSyncWeight();
    await waitFor("step 1", async () => ((await client.status()).global_step === 1 ? true : undefined));
    const [step] = await client.metrics();
    expect(step!.episodes).toBe(1);
    expect(step!.eval_episodes).toBe(2);
    expect(step!.eval_reward_mean).toBe(0.5);
  });
});

describe("checkpoints through the control endpoints", () => {
  it("saves, refuses a missing path without stopping, and resumes the latest at its step", async () => {
    const { client } = await serve(["train_batch_size: 1", "num_repeat: 2", "save_freq: 0"]);
    await playOne(client, "leaf", 1);
    await playOne(client, "leaf", 0);
    await waitFor("step 1", async () => ((await client.status()).global_step === 1 ? true : undefined));
    await waitForState(client, "ENGINE.ROLLING");
    const path = await client.saveCheckpoint();
    expect(path.length).toBeGreaterThan(0);

    const missing = await client.resumeFromCheckpoint("/no/such/checkpoint").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(SwarmRequestError);
    expect((missing as SwarmRequestError).status).toBe(400);
    expect((await client.status()).engine_status).toBe("ENGINE.ROLLING");

    await playOne(client, "ocean", 1);
    await playOne(client, "ocean", 0);
    await waitFor("step 2", async () => ((await client.status()).global_step === 2 ? true : undefined));
    await waitForState(client, "ENGINE.ROLLING");
    await client.resumeFromCheckpoint(path);
    const status = await client.status();
    expect(status.engine_status).toBe("ENGINE.ROLLING");
    expect(status.global_step).toBe(1);
    expect((await client.metrics()).map((entry) => entry.step)).toEqual([1]);
  });

  it("a path that exists but is no checkpoint changes nothing: same step, same weights, still rolling", async () => {
    const { server, client } = await serve(["train_batch_size: 1", "num_repeat: 2", "save_freq: 0"]);
    await playOne(client, "leaf", 1);
    await playOne(client, "leaf", 0);
    await waitFor("step 1", async () => ((await client.status()).global_step === 1 ? true : undefined));
    await waitForState(client, "ENGINE.ROLLING");
    // Under the experiment directory: a path outside the server's allowed roots is refused before any restore.
    await mkdir(server.coordinator.config.experiment_dir, { recursive: true });
    const notACheckpoint = join(server.coordinator.config.experiment_dir, `not-a-checkpoint-${process.pid}.json`);
    await writeFile(notACheckpoint, '{"hello": "world"}');
    const outside = await client.resumeFromCheckpoint(join(tmpdir(), "elsewhere", "checkpoint")).catch((error: unknown) => error);
    expect((outside as SwarmRequestError).status).toBe(400);
    expect(String((outside as Error).message)).toContain("resume_from_checkpoint: path");
    try {
      const refused = await client.resumeFromCheckpoint(notACheckpoint).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SwarmRequestError);
      expect((refused as SwarmRequestError).status).toBe(400);
      expect(String((refused as Error).message)).toMatch(/resume failed: .*back at step 1/);
    } finally {
      await rm(notACheckpoint, { force: true });
    }
    const status = await client.status();
    expect(status.engine_status).toBe("ENGINE.ROLLING");
    expect(status.global_step).toBe(1);
    // Training goes on from there: the next step is 2, not 1 again.
    await playOne(client, "ocean", 1);
    await playOne(client, "ocean", 0);
    await waitFor("step 2", async () => ((await client.status()).global_step === 2 ? true : undefined));
  });
});

describe("multi-turn episodes", () => {
  it("merge the calls of an episode whose messages extend each other into one sample", async () => {
    const { client } = await serve(["train_batch_size: 1", "num_repeat: 2", "save_freq: 0", "compare_level: token"]);
    for (const reward of [1, 0]) {
      const episode = await client.beginEpisode();
      const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: "system", content: "You walk on a compass." },
        { role: "user", content: "You face north. Turn right." },
      ];
      for (let turn = 0; turn < 3; turn += 1) {
        const answer = await openai.chat.completions.create({ model: "m", messages, max_tokens: 2 });
        messages.push({ role: "assistant", content: answer.choices[0]!.message.content ?? "" }, { role: "user", content: "Turn right again." });
      }
      await client.endEpisode("walk-north", episode.episodeUuid, { reward });
    }
    await waitFor("step 1", async () => ((await client.status()).global_step === 1 ? true : undefined));
    const [step] = await client.metrics();
    expect(step!.episodes).toBe(2);
    expect(step!.samples).toBe(2);
    expect(step!.merge_ratio).toBeLessThan(0.6);
  });
});
