import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SwarmClient } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "./logger.ts";
import { rawRequest, temporaryDirectory, waitFor, waitForState } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * Claim squatting over real HTTP (swarm/PROTOCOL.md §6): one client flooding claims is capped at
 * max_claims_per_client with a 429 that says so; a claim asking for a 7-day idle timeout is
 * clamped to max_discard_episode_timeout; and such a claim cannot hold ROLLING_POST past
 * drain_timeout: it is aborted, and the step's metrics count it.
 */
let server: SwarmServer;
let directory: { path: string; remove(): Promise<void> };

beforeAll(async () => {
  directory = await temporaryDirectory("swarm-caps");
  const config = parseSwarmConfig(
    [
      "port: 0",
      "train_batch_size: 1",
      "num_repeat: 1",
      "max_env_worker: 8",
      "max_claims_per_client: 3",
      "max_discard_episode_timeout: 60",
      "drain_timeout: 1",
    ].join("\n"),
    { baseDirectory: directory.path },
  );
  server = await startSwarmServer({ config, logger: silentLogger, tickMs: 50 });
  await waitForState(new SwarmClient({ url: server.url }), "ENGINE.ROLLING");
});

afterAll(async () => {
  await server?.close();
  await directory?.remove();
});

/** The bystander's claim of the first test, aborted by the second with its key. */
let bystander: Record<string, unknown> = {};

const claim = (clientUuid: string, extra: Record<string, unknown> = {}) =>
  rawRequest(`${server.url}/claim_episode`, {
    body: JSON.stringify({ client_uuid: clientUuid, episode_type: "train", discard_episode_timeout: 30, ...extra }),
  });

describe("per-client claim cap", () => {
  it("caps a flood of claims from one client at max_claims_per_client with a 429 naming the cap, while others still claim", async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => claim("flooder")));
    const granted = answers.filter((answer) => answer.status === 200 && answer.body.success === true);
    const capped = answers.filter((answer) => answer.status === 429);
    expect(granted).toHaveLength(3);
    expect(capped).toHaveLength(17);
    expect(String(capped[0]!.body.detail)).toContain("max_claims_per_client reached: this client_uuid already holds 3 running episodes (cap 3)");
    expect(capped[0]!.body.success).toBe(false);
    // The flood took 3 of the 8 slots, not all of them: another client is served.
    bystander = (await claim("bystander")).body;
    expect(bystander.success).toBe(true);
    // The SDK waits on its own 429 instead of failing: it gets an episode once one of its own ends.
    const sdk = new SwarmClient({ url: server.url, clientUuid: "flooder", backoff: { initialMs: 20, maxMs: 50 } });
    const waiting = sdk.beginEpisode({ maxWaitMs: 10_000 });
    const first = granted[0]!.body;
    await rawRequest(`${server.url}/abort_episode`, { body: JSON.stringify({ client_uuid: "flooder", episode_uuid: first.episode_uuid }) });
    const handle = await waiting;
    expect(handle.episodeUuid).not.toBe(first.episode_uuid);
    for (const answer of [...granted.slice(1).map((entry) => entry.body.episode_uuid), handle.episodeUuid])
      await rawRequest(`${server.url}/abort_episode`, { body: JSON.stringify({ client_uuid: "flooder", episode_uuid: answer }) });
    const pool = await rawRequest(`${server.url}/get_current_batch_rollout_pool_information`, { method: "GET" });
    expect(pool.body).toMatchObject({ max_claims_per_client: 3, running_episodes: 1 });
    // a3r's SDK sends a task ratio as AgentJet's throttle_policy: the running episode shows its task.
    const ratioClient = new SwarmClient({ url: server.url });
    const ratioed = await ratioClient.beginEpisode({ taskRatio: { ratio: 1, taskId: "task-with-ratio" } });
    const details = (await rawRequest(`${server.url}/get_current_batch_rollout_pool_information`, { method: "GET" })).body.running_episode_details as Record<
      string,
      Record<string, string>
    >;
    expect(Object.values(details).map((detail) => detail.optional_task_id)).toContain("task-with-ratio");
    await ratioClient.abortEpisode(ratioed.episodeUuid);
    expect((await rawRequest(`${server.url}/get_current_batch_rollout_pool_information`, { method: "GET" })).body.running_episodes).toBe(1);
  });
});

describe("idle timeout cap and drain deadline", () => {
  it("clamps a 7-day discard_episode_timeout, and aborts that claim at the drain deadline so the step trains", async () => {
    // Everyone else has let go; the bystander of the previous test goes too (its key names it).
    const buffer = await rawRequest(`${server.url}/get_episode_buffer`, { body: "{}", headers: { authorization: `Bearer ${bystander.openai_api_key}` } });
    for (const entry of buffer.body.buffer as Array<Record<string, unknown>>)
      if (entry.status === "running")
        await rawRequest(`${server.url}/abort_episode`, { body: JSON.stringify({ client_uuid: "bystander", episode_uuid: entry.episode_uuid }) });
    expect((await rawRequest(`${server.url}/get_current_batch_rollout_pool_information`, { method: "GET" })).body.running_episodes).toBe(0);

    const squat = await claim("squatter", { discard_episode_timeout: 7 * 24 * 3600 });
    expect(squat.body.success).toBe(true);
    expect(squat.body.discard_episode_timeout).toBe(60);
    expect(String(squat.body.warning)).toContain("discard_episode_timeout 604800 s clamped to the server's max_discard_episode_timeout (60 s)");

    // An honest client fills the batch (B = N = 1): the engine waits in ROLLING_POST for the squatter.
    const honest = new SwarmClient({ url: server.url });
    const episode = await honest.beginEpisode();
    await honest.endEpisode("t", episode.episodeUuid, { reward: 1 });
    const before = (await honest.status()).global_step;
    await waitFor("the step to train past the squatter", async () => ((await honest.status()).global_step > before ? true : undefined), 20_000);

    const metrics = await honest.metrics();
    expect(metrics[metrics.length - 1]!.drain_aborted_episodes).toBe(1);
    // The squatter's late end is refused with the reason, and its reward is not recorded.
    const late = await rawRequest(`${server.url}/end_episode`, {
      body: JSON.stringify({
        client_uuid: "squatter",
        episode_uuid: squat.body.episode_uuid,
        task_id: "t",
        workflow_output: { reward: 1, metadata: { task_id: "t" } },
      }),
    });
    // AgentJet's code (400) and the phrase its client logs as an expected warning, not an error.
    expect(late.status).toBe(400);
    expect(String(late.body.detail)).toContain("drain deadline");
    expect(String(late.body.detail)).toContain("WEIGHT_SYNCING");
    const pool = await rawRequest(`${server.url}/get_current_batch_rollout_pool_information`, { method: "GET" });
    expect((pool.body.counters as Record<string, number>).episodes_drain_aborted).toBe(1);
  });
});

describe("what invented client ids leave behind", () => {
  it("remembers a bounded number of task ratios and no activity for uuids that never ended a rewarded episode", async () => {
    const { coordinator } = server;
    await waitFor("ENGINE.ROLLING", () => (coordinator.state.state === "ENGINE.ROLLING" ? true : undefined), 20_000);
    const activeBefore = coordinator.clients.size;
    const granted: Array<{ clientUuid: string; episodeUuid: string }> = [];
    // In process (past the 4096 remembered): 4200 claims over HTTP would take minutes on a loaded machine; the path past the route is the same.
    for (let index = 0; index < 4200; index += 1) {
      const clientUuid = `invented-ratio-${index}`;
      const outcome = coordinator.claim({ clientUuid, type: "train", discardTimeoutSeconds: 30, throttle: { ratio: 0.5, currentTaskId: "t" } });
      if (outcome.ok) granted.push({ clientUuid, episodeUuid: outcome.episode.episodeUuid });
      coordinator.canContinue(clientUuid, "no-such-episode");
    }
    expect(coordinator.taskRatioClients).toBeLessThanOrEqual(4096);
    expect(coordinator.clients.size).toBe(activeBefore);
    for (const { clientUuid, episodeUuid } of granted) coordinator.abort(clientUuid, episodeUuid);
  });
});
