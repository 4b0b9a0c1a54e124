/**
 * A swarm client for the worker's swarm-mode test: the item-color task through the client
 * SDK, with a short discard timeout so that episodes held by a client the test kills are
 * reclaimed in seconds (the `a3r swarm client` default is 10 minutes, during which the
 * server waits for them before it trains).
 *
 *   node bin/run-ts.js worker/__fixtures__/swarm-client.ts <url> <episodes> <concurrency>
 */
import { runEpisodes, SwarmClient } from "../../swarm/client/index.ts";
import task from "../../examples/tasks/item-color/task.ts";

const [url = process.env.A3R_SWARM_URL ?? "", episodes = "1000", concurrency = "2"] = process.argv.slice(2);
const client = new SwarmClient({ url });
const summary = await runEpisodes({ client, task, episodes: Number(episodes), concurrency: Number(concurrency), discardEpisodeTimeout: 2 });
console.log(`episodes ${summary.outcomes.length}${summary.stoppedEarly ? ` (stopped early: ${summary.stoppedEarly})` : ""}`);
