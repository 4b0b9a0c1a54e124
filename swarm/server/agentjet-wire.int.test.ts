import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "./logger.ts";
import { rawRequest, temporaryDirectory, waitFor } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * AgentJet's client, replayed on the wire against a real a3r server: the requests are
 * written from AgentJet's documented protocol (its pydantic request models dumped to JSON,
 * its YAML config tree, its endpoint names), not from its code. A loopback server with no
 * admin token is the setting AgentJet's client runs unchanged in.
 */
let server: SwarmServer;
let directory: { path: string; remove(): Promise<void> };
let url: string;

beforeAll(async () => {
  directory = await temporaryDirectory("swarm-agentjet");
  const config = parseSwarmConfig(["port: 0", "train_batch_size: 1000"].join("\n"), { baseDirectory: directory.path });
  // AgentJet's flow: the server waits OFFLINE for its client to sync a config and start it.
  server = await startSwarmServer({ config, autoStart: false, logger: silentLogger, tickMs: 50 });
  url = server.url;
});

afterAll(async () => {
  await server?.close();
  await directory?.remove();
});

const post = (path: string, body: unknown) => rawRequest(`${url}${path}`, { body: JSON.stringify(body) });
const get = (path: string) => rawRequest(`${url}${path}`, { method: "GET" });

/** AgentJet's config tree as its job object dumps it (trimmed to a realistic subset). */
function agentJetYaml(experimentName: string, method: string): string {
  return stringify({
    ajet: {
      project_name: "cocktail_rl",
      experiment_name: experimentName,
      experiment_dir: "auto",
      backbone: "verl",
      model: { path: "Qwen/Qwen2.5-7B-Instruct" },
      rollout: { user_workflow: null, max_env_worker: 32, num_repeat: 2, temperature: 0.9, compute_madness_checklist: ["nonsense"] },
      data: { max_prompt_length: 3000, max_response_length: 15000, train_batch_size: 4 },
      trainer_common: { logger: "tensorboard", n_gpus_per_node: 8, algorithm: { adv_estimator: "grpo" }, optim: { lr: 1e-6 } },
      enable_swarm_mode: true,
      swarm_mode_sample_collection_method: method,
      interchange_server: { interchange_method: "ipc", interchange_server_port: 10086 },
    },
    hydra: { searchpath: ["file://ajet/default_config"] },
    defaults: ["verl_default", "ajet_default", "_self_"],
  });
}

async function startEngine(): Promise<void> {
  const started = await post("/start_engine", {});
  expect(started.body).toMatchObject({ success: true });
  await waitFor("ENGINE.ROLLING", async () => ((await get("/get_engine_status")).body.engine_status === "ENGINE.ROLLING" ? true : undefined));
}

interface Claimed {
  episode_uuid: string;
  openai_base_url: string;
  openai_api_key: string;
}

/** ClaimEpisodeRequest(...).model_dump(), retried the way AgentJet's client retries a refusal. */
async function claim(clientUuid: string, taskId: string, ratio: number, stopped: () => boolean = () => false): Promise<Claimed | null> {
  const request = {
    client_uuid: clientUuid,
    episode_type: "train",
    discard_episode_timeout: 240,
    throttle_policy: { ratio, expected_batch_size: 4, expected_num_repeat: 2, current_task_id: taskId },
  };
  return waitFor(
    `a claim for ${taskId}`,
    async () => {
      if (stopped()) return null;
      const answer = await post("/claim_episode", request);
      return answer.body.success === true ? (answer.body as unknown as Claimed) : undefined;
    },
    30_000,
    10,
  );
}

/** EndEpisodeRequest(...).model_dump(): no key, a WorkflowOutput with AgentJet's defaults. */
function endRequest(clientUuid: string, episodeUuid: string, taskId: string, reward: number | null) {
  return {
    client_uuid: clientUuid,
    episode_uuid: episodeUuid,
    workflow_output: { reward, is_success: null, metadata: { task_id: taskId }, log_metrics: {} },
    task_id: taskId,
    declare_client_active: true,
  };
}

async function chat(claimed: Claimed): Promise<void> {
  // AgentJet's client swaps the host of openai_base_url for its own server_url.
  const base = claimed.openai_base_url.replace(/^https?:\/\/[^/]+/, url);
  const answer = await fetch(`${base}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${claimed.openai_api_key}` },
    body: JSON.stringify({ model: "agentjet-any-name", messages: [{ role: "user", content: "name a colour" }], max_tokens: 2 }),
  });
  expect(answer.status).toBe(200);
}

describe("AgentJet's client against a3r", () => {
  it("syncs its own YAML (ajet: tree), says what it ignored, starts, and reads the experiment dir", async () => {
    expect((await get("/health")).body).toMatchObject({ status: "ok" });
    expect((await get("/get_engine_status")).body.engine_status).toBe("ENGINE.OFFLINE");
    const synced = await post("/sync_train_config", { yaml_as_string: agentJetYaml("exp_A", "rollout_until_finish_enough_tasks") });
    expect(synced.status).toBe(200);
    expect(synced.body.mapped_keys).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^train_batch_size ← ajet\.data\.train_batch_size\b/),
        expect.stringMatching(/^num_repeat ← ajet\.rollout\.num_repeat\b/),
        expect.stringMatching(/^sampling\.temperature ← ajet\.rollout\.temperature\b/),
      ]),
    );
    expect(synced.body.ignored_keys).toEqual(
      expect.arrayContaining([
        // Each entry starts with the key; the reason that follows is the translation's wording.
        expect.stringMatching(/^ajet\.model\.path\b/),
        expect.stringMatching(/^ajet\.backbone\b/),
        expect.stringMatching(/^hydra\b/),
        expect.stringMatching(/^defaults\b/),
        expect.stringMatching(/^ajet\.trainer_common\.optim\.lr\b.*only with model\.kind vllm/),
      ]),
    );
    expect(server.coordinator.config).toMatchObject({ train_batch_size: 4, num_repeat: 2, max_env_worker: 32 });
    await startEngine();
    const experiment = await get("/get_server_experiment_dir");
    expect(String(experiment.body.server_experiment_dir)).toBe(`${directory.path}/swarm-experiment/exp_A`);
    // A path that escapes the server's experiment root becomes a folder name under it.
    await post("/stop_engine", {});
    const escaping = agentJetYaml("../../etc", "rollout_until_finish_enough_tasks");
    expect((await post("/sync_train_config", { yaml_as_string: escaping })).body.experiment_dir).toBe(`${directory.path}/swarm-experiment/.._.._etc`);
    await post("/sync_train_config", { yaml_as_string: agentJetYaml("exp_A", "rollout_until_finish_enough_tasks") });
    await startEngine();
  });

  it("honours per-client task ratios (3:1) in every batch, with the running episodes' task ids visible and redacted", async () => {
    // Two cocktail clients with the same throughput; without ratios their batches would split 2:2.
    const clients = [
      { uuid: "math-client-0000-aaaa", prefix: "math", ratio: 0.75, next: 0 },
      { uuid: "code-client-0000-bbbb", prefix: "code", ratio: 0.25, next: 0 },
    ];
    // The batch's composition is read the moment it is fixed (ROLLING_POST).
    const compositions: number[][] = [];
    server.coordinator.state.onTransition((record) => {
      if (record.to === "ENGINE.ROLLING_POST" && compositions.length < 2) compositions.push([...server.coordinator.lastBatchTasksPerClient.values()].sort());
    });
    const stop = (): boolean => compositions.length >= 2;
    const lane = async (client: (typeof clients)[number]): Promise<void> => {
      while (!stop()) {
        const task = `${client.prefix}-${Math.floor(client.next++ / 2)}`;
        const claimed = await claim(client.uuid, task, client.ratio, stop);
        if (claimed === null) return;
        const pool = (await get("/get_current_batch_rollout_pool_information")).body;
        const running = (pool.running_episode_details ?? {}) as Record<string, Record<string, string>>;
        for (const [episode, detail] of Object.entries(running)) {
          expect(episode).toMatch(/^episode-[0-9a-f]{12}$/);
          expect(detail.client_uuid).toMatch(/^client-[0-9a-f]{12}$/);
          expect(detail.discard_episode_timeout).toBe("240.0s");
        }
        expect(Object.values(running).some((detail) => detail.optional_task_id === task && detail.episode_status === "claimed")).toBe(true);
        await chat(claimed);
        const ended = await post("/end_episode", endRequest(client.uuid, claimed.episode_uuid, task, Math.random() < 0.5 ? 0 : 1));
        expect(ended.body).toMatchObject({ success: true });
      }
    };
    await Promise.all(clients.flatMap((client) => [lane(client), lane(client)]));
    expect(compositions).toEqual([
      [1, 3],
      [1, 3],
    ]);
    const pool = (await get("/get_current_batch_rollout_pool_information")).body;
    for (const secret of clients.map((client) => client.uuid)) expect(JSON.stringify(pool)).not.toContain(secret);
    expect(Object.values(pool.client_task_quotas as Record<string, number>).sort()).toEqual([1, 3]);
    expect(Object.values(pool.last_batch_tasks_per_client as Record<string, number>).sort()).toEqual([1, 3]);
  });

  it("ends an episode with reward None as 'no reward' (never trained on), aborts its way, and reads the episode buffer", async () => {
    const claimed = (await claim("plain-client-1234", "no-reward-task", 1.5))!;
    const before = server.coordinator.pool.size;
    const ended = await post("/end_episode", endRequest("plain-client-1234", claimed.episode_uuid, "no-reward-task", null));
    expect(ended.body).toMatchObject({ success: true });
    expect(server.coordinator.pool.size).toBe(before);
    const pool = (await get("/get_current_batch_rollout_pool_information")).body;
    expect((pool.counters as Record<string, number>).episodes_ended_without_reward).toBe(1);
    // AgentJet's abort: EndEpisodeRequest with task_id "" and reward 0.0.
    const second = (await claim("plain-client-1234", "aborted-task", 1.5))!;
    expect(await post("/can_continue_episode", { client_uuid: "plain-client-1234", episode_uuid: second.episode_uuid })).toMatchObject({
      body: { can_continue: true },
    });
    const aborted = await post("/abort_episode", {
      ...endRequest("plain-client-1234", second.episode_uuid, "", 0),
      workflow_output: { reward: 0, metadata: {} },
    });
    expect(aborted.body).toMatchObject({ success: true });
    expect((await post("/can_continue_episode", { client_uuid: "plain-client-1234", episode_uuid: second.episode_uuid })).body.can_continue).toBe(false);
    // AgentJet posts {} to get_episode_buffer without a key: an empty buffer, which its
    // EpisodeBufferResponse parses. With one of its keys a client sees its own EpisodeStatus entries.
    const anonymous = (await post("/get_episode_buffer", {})).body;
    expect(anonymous.buffer).toEqual([]);
    const mine = await rawRequest(`${url}/get_episode_buffer`, { body: "{}", headers: { authorization: `Bearer ${second.openai_api_key}` } });
    const buffer = mine.body.buffer as Array<Record<string, unknown>>;
    expect(buffer.map((entry) => entry.episode_uuid)).toEqual(expect.arrayContaining([claimed.episode_uuid, second.episode_uuid]));
    for (const entry of buffer) {
      expect(entry).toHaveProperty("discard_episode_timeout");
      expect(entry.client_uuid).toBe("plain-client-1234");
    }
    // Errors carry FastAPI's {"detail": ...}, where AgentJet's client reads the reason; the
    // codes are AgentJet's: 400 for an unknown episode, 404 for another client's.
    const wrong = await post("/end_episode", endRequest("plain-client-1234", "no-such-episode", "t", 1));
    expect(wrong.status).toBe(400);
    expect(String(wrong.body.detail)).toContain("not found");
  });

  it("answers push_verbose_log and replay_latest_llm_call, and a force_restart starts a fresh experiment", async () => {
    expect((await post("/push_verbose_log", { tag: "trainer", message: "step 3: loss 0.1\u001b[2J" })).body).toMatchObject({ success: true });
    const logs = (await get("/get_verbose_logs")).body.entries as Array<{ tag: string; message: string }>;
    expect(logs[logs.length - 1]).toMatchObject({ tag: "trainer", message: "step 3: loss 0.1 [2J" });
    // The last prompt is shown to its owner (by one of its episode keys) or the admin only.
    expect((await post("/replay_latest_llm_call", {})).status).toBe(401);
    const owner = (await claim("replay-owner", "replay-task", 1.5))!;
    await chat(owner);
    const replay = await rawRequest(`${url}/replay_latest_llm_call`, { body: "{}", headers: { authorization: `Bearer ${owner.openai_api_key}` } });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ input: { messages: [{ role: "user", content: "name a colour" }] } });
    expect(replay.body.output).toHaveProperty("content");
    expect((await get("/get_engine_status")).body.global_step).toBeGreaterThanOrEqual(2);
    // auto_sync_train_config_and_start_engine(force_restart=True) with ensure_new_experiment:
    // stop, sync a config whose experiment_name carries a timestamp, start.
    expect((await post("/stop_engine", {})).body).toMatchObject({ success: true });
    await waitFor("OFFLINE", async () => ((await get("/get_engine_status")).body.engine_status === "ENGINE.OFFLINE" ? true : undefined));
    const synced = await post("/sync_train_config", { yaml_as_string: agentJetYaml("exp_A_20261201-104500", "rollout_until_any_client_agree_sync_weight") });
    expect(synced.status).toBe(200);
    expect(server.coordinator.config.swarm_mode_sample_collection_method).toBe("rollout_until_any_client_agrees_sync_weight");
    await startEngine();
    expect((await get("/get_engine_status")).body.global_step).toBe(0);
    expect((await get("/get_server_experiment_dir")).body.server_experiment_dir).toBe(`${directory.path}/swarm-experiment/exp_A_20261201-104500`);
  });
});
