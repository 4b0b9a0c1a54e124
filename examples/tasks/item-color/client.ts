/**
 * A standalone swarm client for the item-color task, written the way any agent author would:
 * the swarm client SDK for episodes, the npm openai SDK for the model.
 *
 *   npx tsx examples/tasks/item-color/client.ts [server-url] [episodes] [concurrency]
 *
 * Each episode: claim (waits while the server is not ROLLING) → an OpenAI client with the
 * episode's own base URL and key → play → end with the reward (abort on any error, so the
 * server never waits for an episode that will not finish).
 */
import OpenAI from "openai";
import { SwarmClient, SwarmFinishedError } from "../../../swarm/client/index.ts";
import task from "./task.ts";

const url = process.argv[2] ?? process.env.A3R_SWARM_URL ?? "http://127.0.0.1:10086";
const episodes = Number(process.argv[3] ?? 200);
const concurrency = Number(process.argv[4] ?? 8);
const numRepeat = 4; // keep equal to the server's num_repeat so GRPO groups fill

const client = new SwarmClient({ url });
let next = 0;
let done = 0;
let rewardSum = 0;

async function lane(): Promise<void> {
  while (next < episodes) {
    const index = next++;
    let instance = task.sampleTask(Math.floor(index / numRepeat));
    let episode;
    try {
      episode = await client.beginEpisode({ type: "train", discardEpisodeTimeout: 120 });
    } catch (error) {
      if (error instanceof SwarmFinishedError) return;
      throw error;
    }
    // A deterministic server (swarm.yaml `deterministic: true`) names each episode's task seed.
    if (episode.slot) instance = task.sampleTask(episode.slot.taskSeed);
    try {
      const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey });
      const outcome = await task.runEpisode(openai, instance);
      await client.endEpisode(instance.taskId, episode.episodeUuid, {
        reward: outcome.reward,
        isSuccess: outcome.isSuccess,
        ...(outcome.logMetrics ? { logMetrics: outcome.logMetrics } : {}),
      });
      done += 1;
      rewardSum += outcome.reward;
      if (done % 50 === 0) console.log(`${done} episodes, reward mean ${(rewardSum / done).toFixed(3)}, engine ${(await client.status()).engine_status}`);
    } catch (error) {
      await client.abortEpisode(episode.episodeUuid, instance.taskId).catch(() => undefined);
      console.error(`episode ${index} aborted: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

await Promise.all(Array.from({ length: concurrency }, lane));
console.log(`item-color: ${done} episodes, reward mean ${(rewardSum / Math.max(1, done)).toFixed(3)}`);
