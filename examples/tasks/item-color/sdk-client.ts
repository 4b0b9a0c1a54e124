/**
 * A standalone item-color client whose agent speaks Anthropic's Messages API (the
 * @anthropic-ai/sdk client, base URL = the server's root, the episode's key as API key) or
 * OpenAI's Responses API (`client.responses.create`); see sdk-variants.ts. Episodes are run
 * by the swarm client SDK's runner (claim, play, end with the reward, abort on error).
 *
 *   node bin/run-ts.js examples/tasks/item-color/sdk-client.ts <anthropic|responses> [server-url] [episodes] [concurrency]
 *
 * Prints one JSON line at the end: {sdk, completed, failed, rewardMean, stoppedEarly}.
 */
import { runEpisodes, SwarmClient } from "../../../swarm/client/index.ts";
import { itemColorOverAnthropic, itemColorOverResponses } from "./sdk-variants.ts";

const sdk = process.argv[2];
if (sdk !== "anthropic" && sdk !== "responses") {
  console.error("usage: sdk-client.ts <anthropic|responses> [server-url] [episodes] [concurrency]");
  process.exit(2);
}
const url = process.argv[3] ?? process.env.A3R_SWARM_URL ?? "http://127.0.0.1:10086";
const summary = await runEpisodes({
  client: new SwarmClient({ url }),
  task: sdk === "anthropic" ? itemColorOverAnthropic : itemColorOverResponses,
  episodes: Number(process.argv[4] ?? 200),
  concurrency: Number(process.argv[5] ?? 8),
  discardEpisodeTimeout: 120,
});
const { completed, failed, rewardMean, stoppedEarly } = summary;
console.log(JSON.stringify({ sdk, completed, failed, rewardMean, stoppedEarly }));
