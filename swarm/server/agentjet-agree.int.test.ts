import { afterEach, describe, expect, it } from "vitest";
import { parseSwarmConfig } from "../config/config.ts";
import type { TransitionRecord } from "./engine-state.ts";
import { silentLogger } from "./logger.ts";
import { rawRequest, temporaryDirectory, waitFor } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";
import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";

/**
 * AgentJet's swarm client, its decisions replayed on the wire against a real a3r server.
 * Written from its documented protocol (what it sends, what it waits for, which answers it
 * retries on or treats as warnings), not from its code:
 *
 * - it reads the engine state from a cache its own thread refreshes every second;
 * - begin_episode waits for ENGINE.ROLLING, re-reading the state every 5 s;
 * - end_episode sends no key; a 400 whose detail names WEIGHT_SYNCING is a warning (the
 *   episode was discarded during a weight sync), any other error raises;
 * - agree_sync_weight: while the engine is ROLLING or ROLLING_POST it posts the agreement,
 *   retrying every 2 s on a refusal; once accepted it waits, every 5 s and with no
 *   timeout, until the state is ROLLING_POST or WEIGHT_SYNCING.
 *
 * The intervals are parameters so the fast test runs in seconds; the slow-tier test uses
 * AgentJet's own (5 s), and both check that each step stayed observable at least that long.
 */
interface Timing {
  pollMs: number;
  cacheMs: number;
  agreeRetryMs: number;
  claimRetryMs: number;
}

const agentJetTiming: Timing = { pollMs: 5000, cacheMs: 1000, agreeRetryMs: 2000, claimRetryMs: 2000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class AgentJetStyleClient {
  readonly clientUuid = `agentjet-${Math.random().toString(16).slice(2)}`;
  #cache = "ENGINE.CANNOT_CONNECT";
  #stopped = false;
  readonly #refresher: Promise<void>;
  agreementsRefused = 0;
  warnings = 0;

  constructor(
    readonly url: string,
    readonly timing: Timing,
  ) {
    this.#refresher = this.#refresh();
  }

  async #refresh(): Promise<void> {
    while (!this.#stopped) {
      const answer = await rawRequest(`${this.url}/get_engine_status`, { method: "GET" }).catch(() => undefined);
      this.#cache = String(answer?.body.engine_status ?? "ENGINE.CANNOT_CONNECT");
      await sleep(this.timing.cacheMs);
    }
  }

  async close(): Promise<void> {
    this.#stopped = true;
    await this.#refresher;
  }

  /** Polls the cached state every pollMs, with no timeout (a hang is the test's timeout). */
  async waitUntil(states: string[]): Promise<void> {
    let seenOnline = false;
    for (;;) {
      const state = this.#cache;
      if (state !== "ENGINE.OFFLINE" && state !== "ENGINE.CANNOT_CONNECT") seenOnline = true;
      if (seenOnline && state === "ENGINE.OFFLINE" && !states.includes(state)) throw new Error("SwarmServerOfflineError");
      if (states.includes(state)) return;
      await sleep(this.timing.pollMs);
    }
  }

  async beginEpisode(taskId: string): Promise<{ episode_uuid: string; openai_base_url: string; openai_api_key: string }> {
    for (;;) {
      if (this.#cache !== "ENGINE.ROLLING") await this.waitUntil(["ENGINE.ROLLING"]);
      const answer = await rawRequest(`${this.url}/claim_episode`, {
        body: JSON.stringify({ client_uuid: this.clientUuid, episode_type: "train", discard_episode_timeout: 240, throttle_policy: null, task_id: taskId }),
      });
      if (answer.status !== 200) throw new Error(`claim_episode raised: ${answer.status}`);
      if (answer.body.success === true) return answer.body as never;
      await sleep(this.timing.claimRetryMs);
    }
  }

  /** "ended", or "discarded" on AgentJet's warning path; anything else raises as its client does. */
  async endEpisode(taskId: string, episodeUuid: string, reward: number): Promise<"ended" | "discarded"> {
    const answer = await rawRequest(`${this.url}/end_episode`, {
      body: JSON.stringify({
        client_uuid: this.clientUuid,
        episode_uuid: episodeUuid,
        workflow_output: { reward, is_success: null, metadata: { task_id: taskId }, log_metrics: {} },
        task_id: taskId,
        declare_client_active: true,
      }),
    });
    if (answer.status === 400 && String(answer.body.detail).includes("WEIGHT_SYNCING")) {
      this.warnings += 1;
      return "discarded";
    }
    if (answer.status !== 200 || answer.body.success !== true) throw new Error(`RuntimeError: end_episode ${answer.status}: ${String(answer.body.detail)}`);
    return "ended";
  }

  async agreeSyncWeight(): Promise<boolean> {
    for (;;) {
      if (!["ENGINE.ROLLING", "ENGINE.ROLLING_POST"].includes(this.#cache)) return false;
      const answer = await rawRequest(`${this.url}/agree_sync_weight`, { body: JSON.stringify({ client_uuid: this.clientUuid }) });
      if (answer.status === 200 && answer.body.success === true) {
        await this.waitUntil(["ENGINE.ROLLING_POST", "ENGINE.WEIGHT_SYNCING"]);
        return true;
      }
      this.agreementsRefused += 1;
      await sleep(this.timing.agreeRetryMs);
    }
  }
}

/** One local batch (tasks × repeats episodes in parallel), each with one model call, then the agreement. */
async function localBatch(client: AgentJetStyleClient, step: number, tasks: number, repeats: number): Promise<boolean> {
  await Promise.all(
    Array.from({ length: tasks * repeats }, async (_, index) => {
      const taskId = `${client.clientUuid}-s${step}-t${index % tasks}`;
      const claimed = await client.beginEpisode(taskId);
      const base = claimed.openai_base_url.replace(/^https?:\/\/[^/]+/, client.url);
      const chat = await fetch(`${base}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${claimed.openai_api_key}` },
        body: JSON.stringify({ model: "any", messages: [{ role: "user", content: `task ${taskId}` }], max_tokens: 2 }),
      });
      expect(chat.status).toBe(200);
      await client.endEpisode(taskId, claimed.episode_uuid, index % 2);
    }),
  );
  return client.agreeSyncWeight();
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(lines: string[], syncObservableMs?: number): Promise<{ server: SwarmServer; records: TransitionRecord[] }> {
  const directory = await temporaryDirectory("swarm-agree");
  cleanups.push(directory.remove);
  const server = await startSwarmServer({
    config: parseSwarmConfig(["port: 0", "save_freq: 0", ...lines].join("\n"), { baseDirectory: directory.path }),
    logger: silentLogger,
    tickMs: 50,
    ...(syncObservableMs === undefined ? {} : { syncObservableMs }),
  });
  cleanups.push(() => server.close());
  const records: TransitionRecord[] = [];
  server.coordinator.state.onTransition((record) => records.push(record));
  await waitFor("ENGINE.ROLLING", () => (server.coordinator.state.state === "ENGINE.ROLLING" ? true : undefined));
  return { server, records };
}

/** How long each step was observable as ROLLING_POST or WEIGHT_SYNCING (ms, by the server's clock). */
function observableSpans(records: TransitionRecord[]): number[] {
  const spans: number[] = [];
  let since: number | undefined;
  for (const record of records) {
    if (record.to === "ENGINE.ROLLING_POST") since = record.at;
    else if (since !== undefined && record.from === "ENGINE.WEIGHT_SYNCING") {
      spans.push(record.at - since);
      since = undefined;
    }
  }
  return spans;
}

/** Waits until `steps` steps have trained and the engine rolls again. */
function stepsDone(server: SwarmServer, steps: number): Promise<true> {
  const { coordinator } = server;
  return waitFor(`step ${steps}`, () => (coordinator.globalStep >= steps && coordinator.state.state === "ENGINE.ROLLING" ? true : undefined), 60_000);
}

async function trainInAgreeLoop(clients: AgentJetStyleClient[], steps: number): Promise<void> {
  await Promise.all(
    clients.map(async (client) => {
      for (let step = 0; step < steps; step += 1) await localBatch(client, step, 2, 2);
    }),
  );
}

describe("AgentJet's agree-to-sync loop against a3r", () => {
  it("trains step after step (C5), each step observable for the hold, without a hang", async () => {
    // The hold (1000 ms) outlasts the worst staleness of the client's view (poll + cache
    // refresh + a request) by 750 ms, as AgentJet's 8 s outlasts its 5 s + 1 s: under load a
    // thinner margin makes the client miss a step and wait forever.
    const timing: Timing = { pollMs: 200, cacheMs: 50, agreeRetryMs: 200, claimRetryMs: 200 };
    const { server, records } = await serve(["swarm_mode_sample_collection_method: rollout_until_any_client_agree_sync_weight"], 1000);
    const client = new AgentJetStyleClient(server.url, timing);
    cleanups.push(() => client.close());
    // Two steps: AgentJet's client used to hang right after the first (the slow tier runs three).
    await trainInAgreeLoop([client], 2);
    // The client returns once it saw the step it triggered; the last one may still be syncing.
    await stepsDone(server, 2);
    const spans = observableSpans(records);
    expect(spans.length).toBeGreaterThanOrEqual(2);
    for (const span of spans) expect(span).toBeGreaterThanOrEqual(1000);
    expect(client.agreementsRefused).toBe(0);
  }, 60_000);

  it.skipIf(!slowTests)(
    `trains three steps with two clients (C4) polling exactly as AgentJet's client does: every 5 s, no timeout${slowTierNote}`,
    async () => {
      const { server, records } = await serve(["swarm_mode_sample_collection_method: rollout_until_all_clients_agree_sync_weight"]);
      const clients = [new AgentJetStyleClient(server.url, agentJetTiming), new AgentJetStyleClient(server.url, agentJetTiming)];
      for (const client of clients) cleanups.push(() => client.close());
      await trainInAgreeLoop(clients, 3);
      await stepsDone(server, 3);
      // Each step stayed ROLLING_POST or WEIGHT_SYNCING for longer than AgentJet's poll interval.
      const spans = observableSpans(records);
      expect(spans.length).toBeGreaterThanOrEqual(3);
      for (const span of spans) expect(span).toBeGreaterThanOrEqual(agentJetTiming.pollMs);
    },
    300_000,
  );

  it("ends the hold at stop_engine (a 60 s hold, stopped at once)", async () => {
    const { server } = await serve(["swarm_mode_sample_collection_method: rollout_until_any_client_agree_sync_weight"], 60_000);
    const client = new AgentJetStyleClient(server.url, { pollMs: 50, cacheMs: 50, agreeRetryMs: 100, claimRetryMs: 100 });
    cleanups.push(() => client.close());
    const claimed = await client.beginEpisode("t");
    await client.endEpisode("t", claimed.episode_uuid, 1);
    expect((await rawRequest(`${server.url}/agree_sync_weight`, { body: JSON.stringify({ client_uuid: client.clientUuid }) })).body).toMatchObject({
      triggered: true,
    });
    const { coordinator } = server;
    await waitFor("the hold", () => (coordinator.globalStep === 1 && coordinator.state.detail.includes("held in WEIGHT_SYNCING") ? true : undefined));
    // The stop answers only once the step's work is over: with the hold still running it would take a minute.
    expect((await rawRequest(`${server.url}/stop_engine`, { body: "{}" })).status).toBe(200);
    expect(coordinator.state.state).toBe("ENGINE.OFFLINE");
  }, 30_000);

  it("refuses (400, retried) an agreement that cannot trigger a step: before the client is active, on an empty pool, in ROLLING_POST", async () => {
    const { server } = await serve(["swarm_mode_sample_collection_method: rollout_until_all_clients_agree_sync_weight"], 0);
    const client = new AgentJetStyleClient(server.url, { pollMs: 100, cacheMs: 50, agreeRetryMs: 100, claimRetryMs: 100 });
    cleanups.push(() => client.close());
    const agree = (uuid: string) => rawRequest(`${server.url}/agree_sync_weight`, { body: JSON.stringify({ client_uuid: uuid }) });
    const notActive = await agree(client.clientUuid);
    expect(notActive.status).toBe(400);
    expect(String(notActive.body.detail)).toContain("not active yet");
    // Active (a rewarded eval episode) but nothing in the pool: a step would have nothing to train.
    const evaluated = await rawRequest(`${server.url}/claim_episode`, { body: JSON.stringify({ client_uuid: client.clientUuid, episode_type: "eval" }) });
    await client.endEpisode("e", String(evaluated.body.episode_uuid), 1);
    const emptyPool = await agree(client.clientUuid);
    expect(emptyPool.status).toBe(400);
    expect(String(emptyPool.body.detail)).toContain("pool is empty");
    // With a rewarded train episode pooled, its agreement counts.
    const claimed = await client.beginEpisode("t");
    await client.endEpisode("t", claimed.episode_uuid, 1);
    // A second client keeps C4 from firing so the batch can be seen fixed (ROLLING_POST).
    const other = new AgentJetStyleClient(server.url, client.timing);
    cleanups.push(() => other.close());
    const held = await other.beginEpisode("u");
    await other.endEpisode("u", held.episode_uuid, 0);
    const straggler = await other.beginEpisode("v");
    // The pool's rewards per task, as AgentJet's model and monitor spell them.
    const pool = (await rawRequest(`${server.url}/get_current_batch_rollout_pool_information`, { method: "GET" })).body;
    expect(pool.completed_tasks_rewards).toEqual({ t: [1], u: [0] });
    expect((await agree(client.clientUuid)).status).toBe(200);
    expect((await agree(other.clientUuid)).body).toMatchObject({ success: true, triggered: true });
    expect(server.coordinator.state.state).toBe("ENGINE.ROLLING_POST");
    const inRollingPost = await agree(client.clientUuid);
    expect(inRollingPost.status).toBe(400);
    expect(String(inRollingPost.body.detail)).toContain("ENGINE.ROLLING_POST");
    await other.endEpisode("v", straggler.episode_uuid, 1);
    await waitFor("the step", () => (server.coordinator.globalStep === 1 && server.coordinator.state.state === "ENGINE.ROLLING" ? true : undefined));
  });

  it("gives the drain-aborted straggler AgentJet's warning path, and AgentJet's codes for a wrong end", async () => {
    const { server } = await serve(["train_batch_size: 1", "num_repeat: 1", "drain_timeout: 1"]);
    const timing = { pollMs: 100, cacheMs: 50, agreeRetryMs: 100, claimRetryMs: 100 };
    const straggler = new AgentJetStyleClient(server.url, timing);
    const honest = new AgentJetStyleClient(server.url, timing);
    cleanups.push(
      () => straggler.close(),
      () => honest.close(),
    );
    const late = await straggler.beginEpisode("slow");
    const quick = await honest.beginEpisode("fast");
    expect(await honest.endEpisode("fast", quick.episode_uuid, 1)).toBe("ended");
    await waitFor("the step past the straggler", () => (server.coordinator.globalStep >= 1 ? true : undefined), 20_000);
    // AgentJet's client logs a warning here instead of raising in the rollout thread.
    expect(await straggler.endEpisode("slow", late.episode_uuid, 1)).toBe("discarded");
    expect(straggler.warnings).toBe(1);
    // The codes AgentJet's server answers: unknown episode 400, another client's 404, ended twice 400.
    const body = (clientUuid: string, episodeUuid: string) =>
      JSON.stringify({ client_uuid: clientUuid, episode_uuid: episodeUuid, task_id: "x", workflow_output: { reward: 1, metadata: { task_id: "x" } } });
    expect((await rawRequest(`${server.url}/end_episode`, { body: body(honest.clientUuid, "no-such-episode") })).status).toBe(400);
    await waitFor("ROLLING", () => (server.coordinator.state.state === "ENGINE.ROLLING" ? true : undefined));
    const mine = await honest.beginEpisode("x");
    expect((await rawRequest(`${server.url}/end_episode`, { body: body(straggler.clientUuid, mine.episode_uuid) })).status).toBe(404);
    expect(await honest.endEpisode("x", mine.episode_uuid, 1)).toBe("ended");
    expect((await rawRequest(`${server.url}/end_episode`, { body: body(honest.clientUuid, mine.episode_uuid) })).status).toBe(400);
  });
});
