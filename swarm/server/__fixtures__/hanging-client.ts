/**
 * A client that claims an episode, makes one chat call, reports its credentials on stdout
 * as one JSON line, and then hangs without ever ending the episode: the integration test
 * SIGKILLs it to play a client that died mid-episode.
 *
 *   node --import tsx swarm/server/__fixtures__/hanging-client.ts <server-url> <discard-timeout-seconds>
 */
import OpenAI from "openai";
import { SwarmClient } from "../../client/index.ts";

const [url, timeout] = process.argv.slice(2);
const client = new SwarmClient({ url: url! });
const episode = await client.beginEpisode({ type: "train", discardEpisodeTimeout: Number(timeout ?? 1) });
const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "What colour is the apple?" }], max_tokens: 2 });
process.stdout.write(`${JSON.stringify({ ...episode, clientUuid: client.clientUuid })}\n`);
setInterval(() => undefined, 60_000);
