import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SwarmClient, SwarmRequestError } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { rawRequest, temporaryDirectory, waitForState } from "./server-process.test-support.ts";
import { silentLogger } from "./logger.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * The real server in-process (nothing here needs a kill): the OpenAI gateway with the
 * npm openai client, streaming, bad input of every kind, and the admin token. After each
 * bad request the server must still answer and its state must be unchanged.
 */
const adminToken = "admin-token-for-tests";
let server: SwarmServer;
let directory: { path: string; remove(): Promise<void> };
let admin: SwarmClient;

beforeAll(async () => {
  directory = await temporaryDirectory("swarm-gateway");
  const config = parseSwarmConfig(
    [
      "port: 0",
      "train_batch_size: 1000", // never trains during these tests
      "num_repeat: 2",
      "max_env_worker: 3",
      "limits:",
      "  max_messages_per_request: 4",
      "  max_request_body_bytes: 20000",
      "  max_episode_calls: 3",
      "  max_episode_bytes: 40000",
      "  max_cached_episodes: 100",
    ].join("\n"),
    { baseDirectory: directory.path },
  );
  server = await startSwarmServer({ config, adminToken, logger: silentLogger });
  admin = new SwarmClient({ url: server.url, adminToken });
  await waitForState(admin, "ENGINE.ROLLING");
});

afterAll(async () => {
  await server?.close();
  await directory?.remove();
});

async function healthy(): Promise<void> {
  const status = await admin.status();
  expect(status.engine_status).toBe("ENGINE.ROLLING");
}

describe("the OpenAI-compatible gateway", () => {
  it("answers chat completions through the openai SDK with the episode's key, and records nothing after the key is revoked", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    expect(episode.baseUrl).toBe(`${server.url}/v1`);
    const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    const completion = await openai.chat.completions.create({
      model: "anything-goes",
      messages: [{ role: "user", content: "What colour is the sky?" }],
      max_tokens: 3,
    });
    expect(completion.object).toBe("chat.completion");
    expect(completion.model).toBe("anything-goes");
    expect(typeof completion.choices[0]!.message.content).toBe("string");
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBeLessThanOrEqual(3);
    const models = await openai.models.list();
    expect(models.data.length).toBe(1);

    await client.endEpisode("sky", episode.episodeUuid, { reward: 1, isSuccess: true });
    const error = await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "again" }] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as Error).message).toContain("revoked");
  });

  it("streams server-sent events in OpenAI's chunk format ending with [DONE], with usage on request", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    const stream = await openai.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "What colour is the snow?" }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish: string | null | undefined;
    let usage: unknown;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("chat.completion.chunk");
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(finish);
    expect(usage).toMatchObject({ completion_tokens: expect.any(Number) });

    const raw = await fetch(`${episode.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${episode.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true, max_tokens: 2 }),
    });
    expect(raw.headers.get("content-type")).toContain("text/event-stream");
    const body = await raw.text();
    expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
    await client.abortEpisode(episode.episodeUuid);
  });

  it("ignores sampling fields it cannot honour with a warning header instead of rejecting them", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const response = await rawRequest(`${episode.baseUrl}/chat/completions`, {
      headers: { authorization: `Bearer ${episode.apiKey}` },
      body: JSON.stringify({
        model: "m",
        messages: [
          { role: "developer", content: "be brief" },
          { role: "user", content: [{ type: "text", text: "hi" }] },
        ],
        frequency_penalty: 0.5,
        logit_bias: {},
        max_tokens: 2,
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-swarm-warnings")).toContain("frequency_penalty");
    expect(response.headers.get("x-swarm-warnings")).toContain("logit_bias");
    // A field name that cannot go into a header is reported, not fatal.
    const odd = await rawRequest(`${episode.baseUrl}/chat/completions`, {
      headers: { authorization: `Bearer ${episode.apiKey}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 2, "bad\nname\u00e9": 1 }),
    });
    expect(odd.status).toBe(200);
    expect(odd.headers.get("x-swarm-warnings")).toContain("bad?name?");
    await client.abortEpisode(episode.episodeUuid);
  });

  it("refuses missing or unknown API keys, bad bodies, oversized bodies, too many messages and too many calls with reasons", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const url = `${episode.baseUrl}/chat/completions`;
    const auth = { authorization: `Bearer ${episode.apiKey}` };

    const noKey = await rawRequest(url, { body: "{}" });
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ error: { type: "authentication_error" } });
    expect((await rawRequest(url, { body: "{}", headers: { authorization: "Bearer sk-swarm-made-up" } })).status).toBe(401);

    const malformed = await rawRequest(url, { body: "{not json", headers: auth });
    expect(malformed.status).toBe(400);
    expect(String((malformed.body.error as { message: string }).message)).toContain("not valid JSON");

    const wrongType = await rawRequest(url, { body: JSON.stringify({ messages: "hello" }), headers: auth });
    expect(wrongType.status).toBe(400);
    expect(String((wrongType.body.error as { message: string }).message)).toContain('"messages"');

    const tooLarge = await rawRequest(url, { body: JSON.stringify({ messages: [{ role: "user", content: "x".repeat(30_000) }] }), headers: auth });
    expect(tooLarge.status).toBe(413);

    const manyMessages = Array.from({ length: 5 }, () => ({ role: "user", content: "hi" }));
    const tooMany = await rawRequest(url, { body: JSON.stringify({ messages: manyMessages }), headers: auth });
    expect(tooMany.status).toBe(400);
    expect(String((tooMany.body.error as { message: string }).message)).toContain("max_messages_per_request");

    const openai = new OpenAI({ baseURL: episode.baseUrl, apiKey: episode.apiKey, maxRetries: 0 });
    for (let call = 0; call < 3; call += 1) await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
    const overCalls = await rawRequest(url, { body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }), headers: auth });
    expect(overCalls.status).toBe(400);
    expect(String((overCalls.body.error as { message: string }).message)).toContain("max_episode_calls");
    await client.abortEpisode(episode.episodeUuid);
    await healthy();
  });
});

describe("per-episode memory", () => {
  it("refuses requests once an episode has sent max_episode_bytes in all", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const body = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(15_000) }], max_tokens: 1 });
    const auth = { authorization: `Bearer ${episode.apiKey}` };
    expect((await rawRequest(`${episode.baseUrl}/chat/completions`, { body, headers: auth })).status).toBe(200);
    expect((await rawRequest(`${episode.baseUrl}/chat/completions`, { body, headers: auth })).status).toBe(200);
    const third = await rawRequest(`${episode.baseUrl}/chat/completions`, { body, headers: auth });
    expect(third.status).toBe(413);
    expect(String((third.body.error as { message: string }).message)).toContain("max_episode_bytes");
    await client.abortEpisode(episode.episodeUuid);
  });
});

describe("the episode protocol under bad input", () => {
  it("answers 4xx with the reason for a wrong task id, an unknown episode, a wrong client and a finished episode", async () => {
    const owner = new SwarmClient({ url: server.url, adminToken });
    const episode = await owner.beginEpisode();
    const base = { client_uuid: owner.clientUuid, episode_uuid: episode.episodeUuid, task_id: "a" };
    // The owner's own key: this server has an admin token, so ends must carry it.
    const headers = { authorization: `Bearer ${episode.apiKey}` };

    const mismatch = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({ ...base, workflow_output: { reward: 1, metadata: { task_id: "b" } } }),
    });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.success).toBe(false);
    expect(String(mismatch.body.error)).toContain("metadata.task_id");

    const unknown = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({ ...base, episode_uuid: "nope", workflow_output: { reward: 1 } }),
    });
    // AgentJet's codes: an unknown episode is a 400, another client's a 404, a finished one a 400.
    expect(unknown.status).toBe(400);
    expect(String(unknown.body.detail)).toContain("not found");

    const stranger = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({ ...base, client_uuid: "someone-else", workflow_output: { reward: 1 } }),
    });
    expect(stranger.status).toBe(404);

    const badReward = await rawRequest(`${server.url}/end_episode`, { headers, body: JSON.stringify({ ...base, workflow_output: { reward: "high" } }) });
    expect(badReward.status).toBe(400);
    expect(String(badReward.body.error)).toContain("workflow_output.reward");

    const tooManyNames = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({
        ...base,
        workflow_output: { reward: 1, metadata: { task_id: "a" }, log_metrics: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`m${i}`, i])) },
      }),
    });
    expect(tooManyNames.status).toBe(400);
    expect(String(tooManyNames.body.error)).toContain("at most 64 log_metrics per episode");
    // A missing reward is a client bug; `reward: null` (AgentJet's "no reward") is accepted (agentjet-wire test).
    const noReward = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({ ...base, workflow_output: { metadata: { task_id: "a" } } }),
    });
    expect(noReward.status).toBe(400);
    expect(noReward.body.detail).toBe(noReward.body.error);
    // Huge rewards would overflow GRPO's group sums into NaN weights.
    const huge = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({ ...base, workflow_output: { reward: [1e308, 1e308], metadata: { task_id: "a" } } }),
    });
    expect(huge.status).toBe(400);
    expect(String(huge.body.error)).toContain("within");
    // AgentJet clients may send a list of rewards: their mean counts.
    const listed = await rawRequest(`${server.url}/end_episode`, {
      headers,
      body: JSON.stringify({ ...base, workflow_output: { reward: [0, 1], metadata: { task_id: "a" }, log_metrics: { turns: [1, 3] } } }),
    });
    expect(listed.status).toBe(200);
    expect((await owner.episodeBuffer()).find((entry) => entry.episode_uuid === episode.episodeUuid)?.reward).toBe(0.5);
    const twice = await owner.endEpisode("a", episode.episodeUuid, { reward: 0.5 }).catch((error: unknown) => error);
    expect(twice).toBeInstanceOf(SwarmRequestError);
    expect((twice as SwarmRequestError).status).toBe(400);

    expect(
      (await rawRequest(`${server.url}/claim_episode`, { headers: { "x-admin-token": adminToken }, body: JSON.stringify({ episode_type: "train" }) })).status,
    ).toBe(400);
    expect((await rawRequest(`${server.url}/no_such_endpoint`, { body: "{}" })).status).toBe(404);
    expect((await rawRequest(`${server.url}/claim_episode`, { method: "GET" })).status).toBe(405);
    await healthy();
  });

  it("caps concurrent episodes and says why", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const claims = [await client.beginEpisode(), await client.beginEpisode(), await client.beginEpisode()];
    const refused = await rawRequest(`${server.url}/claim_episode`, {
      headers: { "x-admin-token": adminToken },
      body: JSON.stringify({ client_uuid: "x", episode_type: "train", discard_episode_timeout: 60 }),
    });
    expect(refused.body.success).toBe(false);
    expect(String(refused.body.fail_cause)).toContain("max_env_worker");
    // The phrase AgentJet's client matches to retry soon.
    expect(String(refused.body.fail_cause)).toContain("No available episodes to claim.");
    for (const claim of claims) await client.abortEpisode(claim.episodeUuid);
    const again = await rawRequest(`${server.url}/claim_episode`, { headers: { "x-admin-token": adminToken }, body: JSON.stringify({ client_uuid: "x" }) });
    expect(again.body.success).toBe(true);
    await rawRequest(`${server.url}/abort_episode`, {
      body: JSON.stringify({ client_uuid: "x", episode_uuid: again.body.episode_uuid }),
      headers: { authorization: `Bearer ${again.body.openai_api_key}` },
    });
    expect((await admin.poolInformation()).running_episodes).toBe(0);
  });

  it("refuses control endpoints without the admin token, and an episode key is not an admin token", async () => {
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    for (const path of ["/stop_engine", "/start_engine", "/sync_train_config", "/save_checkpoint", "/resume_from_checkpoint"]) {
      const anonymous = await rawRequest(`${server.url}${path}`, { body: "{}" });
      expect(anonymous.status, path).toBe(401);
      const withEpisodeKey = await rawRequest(`${server.url}${path}`, { body: "{}", headers: { authorization: `Bearer ${episode.apiKey}` } });
      expect(withEpisodeKey.status, path).toBe(401);
    }
    await healthy();
    // The running episode survived every refused control call.
    expect(await client.canContinue(episode.episodeUuid)).toBe(true);
    await client.abortEpisode(episode.episodeUuid);
  });

  it("keeps AgentJet's state-revealing endpoints (experiment dir, last LLM call, verbose log) behind the admin token", async () => {
    const gets = ["/get_server_experiment_dir", "/get_verbose_logs"];
    const posts = ["/replay_latest_llm_call", "/push_verbose_log"];
    for (const path of [...gets, ...posts]) {
      const method = gets.includes(path) ? "GET" : "POST";
      const anonymous = await rawRequest(`${server.url}${path}`, { method, ...(method === "POST" ? { body: JSON.stringify({ message: "x" }) } : {}) });
      expect(anonymous.status, path).toBe(401);
      expect(String(anonymous.body.detail), path).toContain("admin token");
    }
    const experiment = await rawRequest(`${server.url}/get_server_experiment_dir`, { method: "GET", headers: { "x-admin-token": adminToken } });
    expect(experiment.body.server_experiment_dir).toBe(server.coordinator.config.experiment_dir);
    const pushed = await rawRequest(`${server.url}/push_verbose_log`, { body: JSON.stringify({ message: "hello" }), headers: { "x-admin-token": adminToken } });
    expect(pushed.body).toMatchObject({ success: true });
  });

  it("enforces engine states on the server side", async () => {
    const started = await rawRequest(`${server.url}/start_engine`, { headers: { "x-admin-token": adminToken } });
    expect(started.status).toBe(409);
    expect(String(started.body.error)).toContain("only while ENGINE.OFFLINE");
    const synced = await rawRequest(`${server.url}/sync_train_config`, {
      body: JSON.stringify({ yaml_as_string: "num_repeat: 3" }),
      headers: { "x-admin-token": adminToken },
    });
    expect(synced.status).toBe(409);

    await admin.stop();
    const claim = await rawRequest(`${server.url}/claim_episode`, { headers: { "x-admin-token": adminToken }, body: JSON.stringify({ client_uuid: "late" }) });
    expect(claim.body.success).toBe(false);
    expect(String(claim.body.fail_cause)).toContain("ENGINE.OFFLINE");
    const badConfig = await rawRequest(`${server.url}/sync_train_config`, {
      body: JSON.stringify({ yaml_as_string: "optimizer:\n  lrr: 1\n" }),
      headers: { "x-admin-token": adminToken },
    });
    expect(badConfig.status).toBe(400);
    expect(String(badConfig.body.error)).toContain('did you mean "lr"');
    // A key in its old camelCase spelling still works; the answer says what to write.
    const oldSpelling = await rawRequest(`${server.url}/sync_train_config`, {
      body: JSON.stringify({ yaml_as_string: "model:\n  kind: embedded\n  embedded: { featureBits: 10 }\n" }),
      headers: { "x-admin-token": adminToken },
    });
    expect(oldSpelling.status).toBe(200);
    expect(oldSpelling.body.deprecated_keys).toEqual([
      'yaml_as_string:3: deprecated key "model.embedded.featureBits": write "model.embedded.feature_bits" (the camelCase spelling still works for now)',
    ]);
    await admin.syncTrainConfig("train_batch_size: 1000\nnum_repeat: 3\nmax_env_worker: 3\n");
    await admin.start();
    await waitForState(admin, "ENGINE.ROLLING");
    expect((await admin.poolInformation()).task_expected_num_repeat).toBe(3);
  });
});

describe("garbage on every endpoint", () => {
  it("never answers 5xx and stays healthy", async () => {
    let seed = 12345;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
    const value = (depth: number): unknown => {
      const kind = pick(["string", "number", "null", "bool", "array", "object", "huge-number"] as const);
      if (depth > 2 && (kind === "array" || kind === "object")) return "leaf";
      switch (kind) {
        case "string":
          return pick(["", "x", "train", "eval", "ENGINE.ROLLING", "\u0000", "💥".repeat(20)]);
        case "number":
          return pick([0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER]);
        case "huge-number":
          return 1e400;
        case "null":
          return null;
        case "bool":
          return random() < 0.5;
        case "array":
          return Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1));
        case "object": {
          const keys = [
            "client_uuid",
            "episode_uuid",
            "task_id",
            "workflow_output",
            "reward",
            "metadata",
            "messages",
            "role",
            "content",
            "episode_type",
            "discard_episode_timeout",
            "yaml_as_string",
            "path",
            "stream",
          ];
          return Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, () => [pick(keys), value(depth + 1)]));
        }
      }
    };
    const client = new SwarmClient({ url: server.url, adminToken });
    const episode = await client.beginEpisode();
    const paths = [
      "/claim_episode",
      "/end_episode",
      "/abort_episode",
      "/can_continue_episode",
      "/agree_sync_weight",
      "/get_episode_buffer",
      "/sync_train_config",
      "/save_checkpoint",
      "/v1/chat/completions",
    ];
    for (let round = 0; round < 300; round += 1) {
      const path = pick(paths);
      const body = random() < 0.15 ? JSON.stringify(value(0)).slice(0, Math.floor(random() * 20)) : JSON.stringify(value(0));
      const headers: Record<string, string> = path.startsWith("/v1/") ? { authorization: `Bearer ${episode.apiKey}` } : {};
      const response = await rawRequest(`${server.url}${path}`, { body, headers });
      expect(response.status, `${path} ${body}`).toBeLessThan(500);
    }
    // Garbage claims made episodes for random client uuids: only the admin sees their uuids.
    const buffer = await admin.episodeBuffer();
    for (const entry of buffer) {
      if (entry.status === "running")
        await rawRequest(`${server.url}/abort_episode`, {
          body: JSON.stringify({ client_uuid: entry.client_uuid, episode_uuid: entry.episode_uuid }),
          headers: { "x-admin-token": adminToken },
        });
    }
    await healthy();
    expect((await admin.poolInformation()).running_episodes).toBe(0);
  });
});

describe("episode uuids are capabilities (no forged rewards)", () => {
  it("shows nobody without the admin token another caller's episode or client uuid", async () => {
    const victim = new SwarmClient({ url: server.url, adminToken });
    const episode = await victim.beginEpisode();
    // The snooper only reads: it holds no token (claims on this server would need it).
    const snooper = new SwarmClient({ url: server.url });
    const pool = JSON.stringify(await snooper.poolInformation());
    const buffer = JSON.stringify(await snooper.episodeBuffer());
    for (const secret of [episode.episodeUuid, victim.clientUuid, episode.apiKey]) {
      expect(pool).not.toContain(secret);
      expect(buffer).not.toContain(secret);
    }
    // What AgentJet's throttle reads is still there: one running episode with its age and task.
    const running = (await snooper.poolInformation()).running_episode_details as Record<string, Record<string, string>>;
    expect(Object.values(running).some((entry) => entry.episode_status === "claimed" && /^\d+\.\ds$/.test(entry.time_since_last_activity ?? ""))).toBe(true);
    // The owner and the admin see the real ids.
    expect((await victim.episodeBuffer()).some((entry) => entry.episode_uuid === episode.episodeUuid)).toBe(true);
    expect(JSON.stringify(await admin.poolInformation())).toContain(episode.episodeUuid);
    await victim.abortEpisode(episode.episodeUuid);
  });

  it("refuses an end with another episode's key, and (admin token set) an end with no key", async () => {
    const victim = new SwarmClient({ url: server.url, adminToken });
    const episode = await victim.beginEpisode();
    const attacker = await new SwarmClient({ url: server.url, adminToken }).beginEpisode();
    const forged = {
      client_uuid: victim.clientUuid,
      episode_uuid: episode.episodeUuid,
      task_id: "x",
      workflow_output: { reward: 1_000_000, metadata: { task_id: "x" } },
    };
    const withOtherKey = await rawRequest(`${server.url}/end_episode`, {
      body: JSON.stringify(forged),
      headers: { authorization: `Bearer ${attacker.apiKey}` },
    });
    expect(withOtherKey.status).toBe(403);
    expect(String(withOtherKey.body.error)).toContain("does not belong to this episode");
    const withoutKey = await rawRequest(`${server.url}/end_episode`, { body: JSON.stringify(forged) });
    expect(withoutKey.status).toBe(401);
    expect(String(withoutKey.body.error)).toContain("require_episode_key");
    const abortWithoutKey = await rawRequest(`${server.url}/abort_episode`, {
      body: JSON.stringify({ client_uuid: victim.clientUuid, episode_uuid: episode.episodeUuid }),
    });
    expect(abortWithoutKey.status).toBe(401);
    // The victim's episode is untouched: its own end (the SDK sends the key) succeeds.
    await victim.endEpisode("x", episode.episodeUuid, { reward: 0 });
    expect((await victim.episodeBuffer()).find((entry) => entry.episode_uuid === episode.episodeUuid)?.reward).toBe(0);
    await rawRequest(`${server.url}/abort_episode`, {
      body: JSON.stringify({ client_uuid: "x", episode_uuid: attacker.episodeUuid }),
      headers: { authorization: `Bearer ${attacker.apiKey}` },
    });
    await healthy();
  });
});
