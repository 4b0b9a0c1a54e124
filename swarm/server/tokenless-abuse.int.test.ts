import { spawn } from "node:child_process";
import { request as httpRequest, Agent } from "node:http";
import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SwarmClient } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "./logger.ts";
import { rawRequest, temporaryDirectory, waitForState } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * A token-less server on loopback (`a3r swarm serve`'s default) attacked by a second client
 * on the same machine (issue 23): every abuse it once allowed is tried for real over HTTP
 * and must be refused. `tally` counts tries and refusals per group; the last test prints them.
 */
let server: SwarmServer;
let directory: { path: string; remove(): Promise<void> };
const tally = new Map<string, { tried: number; refused: number }>();

function count(group: string, refused: boolean): void {
  const entry = tally.get(group) ?? { tried: 0, refused: 0 };
  entry.tried += 1;
  if (refused) entry.refused += 1;
  tally.set(group, entry);
}

beforeAll(async () => {
  directory = await temporaryDirectory("swarm-abuse");
  const config = parseSwarmConfig(
    ["port: 0", "train_batch_size: 1000", "max_env_worker: 16", "max_claims_per_client: 2", "max_unkeyed_claimers: 4", "experiment_dir: ./experiment"].join(
      "\n",
    ),
    { baseDirectory: directory.path },
  );
  server = await startSwarmServer({ config, logger: silentLogger });
  await waitForState(new SwarmClient({ url: server.url }), "ENGINE.ROLLING");
});

afterAll(async () => {
  await server?.close();
  await directory?.remove();
});

const endBody = (clientUuid: string, episodeUuid: string) =>
  JSON.stringify({ client_uuid: clientUuid, episode_uuid: episodeUuid, task_id: "t", workflow_output: { reward: 1e6, metadata: { task_id: "t" } } });

/** Runs a Node script as another local OS user (nobody), the way a second account on the machine would; its stdout. */
function runAsOtherUser(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script, ...args], { uid: 65534, gid: 65534, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`the other user's requests failed (exit ${code})`))));
  });
}

/** POSTs of one body to each URL as nobody, in one process (each start costs seconds under load); their statuses. */
async function postAsOtherUser(urls: string[], body: string): Promise<number[]> {
  const script = `(async () => { const [body, ...urls] = process.argv.slice(1); const statuses = []; for (const url of urls) statuses.push((await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body })).status); console.log(statuses.join(",")); })().catch((e) => { console.error(e); process.exit(2); });`;
  return (await runAsOtherUser(script, [body, ...urls])).split(",").map(Number);
}

/**
 * Keyless end_episode as nobody, over raw sockets: from 127.0.0.2..9 bound to the server's
 * own port (each waits for the answer's status), then from fresh ports closing right after
 * the request ("closed": no answer read). Returns each status line's code.
 */
function spoofAsOtherUser(port: number, body: string): Promise<string[]> {
  const script = `
const net = require("node:net");
const [port, body] = [Number(process.argv[1]), process.argv[2]];
const request = "POST /end_episode HTTP/1.1\\r\\nhost: 127.0.0.1\\r\\ncontent-type: application/json\\r\\ncontent-length: " + Buffer.byteLength(body) + "\\r\\nconnection: close\\r\\n\\r\\n" + body;
function once(options, closeAtOnce) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port, ...options }, () => {
      socket.write(request);
      if (closeAtOnce) { socket.destroy(); setTimeout(() => resolve("closed"), 100); }
    });
    let text = "";
    socket.on("data", (chunk) => { text += chunk; });
    socket.on("close", () => { if (!closeAtOnce) resolve(text.split(" ")[1] || "no answer"); });
    socket.on("error", (error) => resolve("error " + error.code));
  });
}
(async () => {
  const statuses = [];
  for (let x = 2; x <= 9; x += 1) statuses.push(await once({ localAddress: "127.0.0." + x, localPort: port }, false));
  for (let i = 0; i < 4; i += 1) statuses.push(await once({}, true));
  console.log(statuses.join(","));
})();`;
  return runAsOtherUser(script, [String(port), body]).then((out) => out.split(","));
}

/** A POST on a chosen agent: one kept-alive socket, or a fresh connection each time. */
function post(url: string, body: string, agent: Agent | false): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
    });
    request.on("error", reject);
    request.end(body);
  });
}

const canSwitchUser = typeof process.getuid === "function" && process.getuid() === 0;

describe("a token-less loopback server refuses a second local client", () => {
  it.skipIf(!canSwitchUser)("refuses ending or aborting another's episode without its key from another OS user (root needed to be one)", async () => {
    const victim = new SwarmClient({ url: server.url, clientUuid: "victim-client" });
    const episode = await victim.beginEpisode();
    // Worst case: the attacker learned both uuids (a log line); it still has no key.
    const paths = ["/end_episode", "/abort_episode"];
    const statuses = await postAsOtherUser(
      paths.map((path) => `${server.url}${path}`),
      endBody("victim-client", episode.episodeUuid),
    );
    for (const status of statuses) count("end/abort without the key", status === 401);
    expect(statuses).toEqual([401, 401]);
    expect(await victim.canContinue(episode.episodeUuid)).toBe(true);
    await victim.endEpisode("t", episode.episodeUuid, { reward: 0 });
  });

  it.skipIf(!canSwitchUser)(
    "refuses a keyless end from another OS user bound to the server's own port on another loopback address, or closing at once",
    async () => {
      const victim = new SwarmClient({ url: server.url, clientUuid: "victim-client" });
      const episode = await victim.beginEpisode();
      // From 127.0.0.X:<server port>, the server's accepted end has the attacker's two ports:
      // a lookup by ports alone found the server's own socket (its user) for some X. Closing
      // right after the request leaves an end the kernel lists with uid 0 (root's, here).
      const statuses = await spoofAsOtherUser(server.port, endBody("victim-client", episode.episodeUuid));
      count(
        "keyless end spoofing the socket table",
        statuses.every((status) => status === "401" || status === "closed"),
      );
      expect(statuses.filter((status) => status !== "401" && status !== "closed")).toEqual([]);
      expect(await victim.canContinue(episode.episodeUuid)).toBe(true);
      await victim.endEpisode("t", episode.episodeUuid, { reward: 0 });
      expect((await victim.episodeBuffer()).find((entry) => entry.episode_uuid === episode.episodeUuid)?.reward).toBe(0);
    },
  );

  it.skipIf(!canSwitchUser)("answers the control endpoints to no other OS user (they choose what the server runs and loads)", async () => {
    // The attack: a model whose "python" is the attacker's script, then start_engine runs it as the server's user.
    const yaml = ["model:", "  kind: vllm", "  model: tiny", "  python: /tmp/a3r-abuse-evil.sh", "experiment_dir: ./experiment"].join("\n");
    const controls = ["/stop_engine", "/sync_train_config", "/start_engine", "/save_checkpoint", "/resume_from_checkpoint", "/push_verbose_log"];
    const statuses = await postAsOtherUser(
      controls.map((path) => `${server.url}${path}`),
      JSON.stringify({ yaml_as_string: yaml }),
    );
    for (const status of statuses) count("control endpoints from another OS user", status === 401);
    expect(statuses).toEqual(controls.map(() => 401));
    expect(server.coordinator.config.model.kind).not.toBe("vllm");
    expect((await new SwarmClient({ url: server.url }).status()).engine_status).toBe("ENGINE.ROLLING");
  });

  it("refuses an end or abort with the attacker's own key, and keeps the victim's episode and reward", async () => {
    const victim = new SwarmClient({ url: server.url, clientUuid: "victim-client" });
    const episode = await victim.beginEpisode();
    const attacker = new SwarmClient({ url: server.url, clientUuid: "attacker-client" });
    const own = await attacker.beginEpisode();
    for (const path of ["/end_episode", "/abort_episode"]) {
      for (const clientUuid of ["victim-client", "attacker-client"]) {
        const answer = await rawRequest(`${server.url}${path}`, {
          body: endBody(clientUuid, episode.episodeUuid),
          headers: { authorization: `Bearer ${own.apiKey}` },
        });
        count("end/abort with another episode's key", answer.status === 403);
        expect(answer.status, `${path} as ${clientUuid}`).toBe(403);
      }
    }
    await victim.endEpisode("t", episode.episodeUuid, { reward: 0.25 });
    const mine = await victim.episodeBuffer();
    expect(mine.find((entry) => entry.episode_uuid === episode.episodeUuid)?.reward).toBe(0.25);
    await attacker.abortEpisode(own.episodeUuid);
  });

  it("answers get_episode_buffer only about the caller's own episodes", async () => {
    const victim = new SwarmClient({ url: server.url, clientUuid: "victim-client" });
    const episode = await victim.beginEpisode();
    const attacker = new SwarmClient({ url: server.url, clientUuid: "attacker-client" });
    const own = await attacker.beginEpisode();
    const tries: Array<{ body: Record<string, string>; headers: Record<string, string> }> = [
      { body: { client_uuid: "victim-client" }, headers: {} },
      { body: {}, headers: {} },
      { body: { client_uuid: "victim-client" }, headers: { authorization: `Bearer ${own.apiKey}` } },
      { body: { client_uuid: "victim-client" }, headers: { authorization: "Bearer sk-swarm-guessed" } },
    ];
    for (const attempt of tries) {
      const answer = await rawRequest(`${server.url}/get_episode_buffer`, { body: JSON.stringify(attempt.body), headers: attempt.headers });
      const text = JSON.stringify(answer.body);
      const leaked = text.includes(episode.episodeUuid) || text.includes("victim-client");
      count("get_episode_buffer about another client", !leaked);
      expect(leaked, JSON.stringify(attempt)).toBe(false);
    }
    // The attacker's own key shows its own episode, and the victim's SDK its own.
    const ownView = await rawRequest(`${server.url}/get_episode_buffer`, { body: "{}", headers: { authorization: `Bearer ${own.apiKey}` } });
    expect((ownView.body.buffer as Array<Record<string, unknown>>).map((entry) => entry.episode_uuid)).toContain(own.episodeUuid);
    expect((await victim.episodeBuffer()).map((entry) => entry.episode_uuid)).toContain(episode.episodeUuid);
    await victim.abortEpisode(episode.episodeUuid);
    await attacker.abortEpisode(own.episodeUuid);
  });

  it("shows replay_latest_llm_call only to its owner", async () => {
    const victim = new SwarmClient({ url: server.url, clientUuid: "victim-client" });
    const episode = await victim.beginEpisode();
    const secretPrompt = "the victim's private prompt";
    const chat = await fetch(`${episode.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${episode.apiKey}` },
      body: JSON.stringify({ messages: [{ role: "user", content: secretPrompt }], max_tokens: 2 }),
    });
    expect(chat.status).toBe(200);
    const attacker = new SwarmClient({ url: server.url, clientUuid: "attacker-client" });
    const own = await attacker.beginEpisode();
    const attempts: Array<Record<string, string>> = [{}, { authorization: `Bearer ${own.apiKey}` }, { authorization: "Bearer sk-swarm-guessed" }];
    for (const headers of attempts) {
      const answer = await rawRequest(`${server.url}/replay_latest_llm_call`, { body: "{}", headers });
      const leaked = JSON.stringify(answer.body).includes(secretPrompt);
      count("replay_latest_llm_call of another client", !leaked && answer.status >= 400);
      expect(leaked).toBe(false);
    }
    const owner = await rawRequest(`${server.url}/replay_latest_llm_call`, { body: "{}", headers: { authorization: `Bearer ${episode.apiKey}` } });
    expect(JSON.stringify(owner.body)).toContain(secretPrompt);
    await victim.abortEpisode(episode.episodeUuid);
    await attacker.abortEpisode(own.episodeUuid);
  });

  it("confines sync_train_config's experiment_dir and resume_from_checkpoint's path, naming the field", async () => {
    await rawRequest(`${server.url}/stop_engine`, { body: "{}" });
    const outsideLink = join(server.coordinator.config.experiment_dir, "escape");
    await mkdir(server.coordinator.config.experiment_dir, { recursive: true });
    await symlink("/etc", outsideLink);
    const places = ["/etc/a3r-abuse", "/root/.ssh", join(directory.path, "..", "elsewhere"), join(outsideLink, "cron.d")];
    for (const place of places) {
      const answer = await rawRequest(`${server.url}/sync_train_config`, { body: JSON.stringify({ yaml_as_string: `experiment_dir: ${place}\n` }) });
      count("experiment_dir / checkpoint path outside the roots", answer.status === 400);
      expect(answer.status, place).toBe(400);
      expect(String(answer.body.detail)).toContain("experiment_dir");
    }
    await rawRequest(`${server.url}/start_engine`, { body: "{}" });
    await waitForState(new SwarmClient({ url: server.url }), "ENGINE.ROLLING");
    for (const place of ["/etc/passwd", join(outsideLink, "passwd")]) {
      const answer = await rawRequest(`${server.url}/resume_from_checkpoint`, { body: JSON.stringify({ path: place }) });
      count("experiment_dir / checkpoint path outside the roots", answer.status === 400);
      expect(answer.status, place).toBe(400);
      expect(String(answer.body.detail)).toContain("resume_from_checkpoint: path");
    }
    // The run is untouched and a directory under the experiment root is still accepted.
    expect((await new SwarmClient({ url: server.url }).status()).engine_status).toBe("ENGINE.ROLLING");
    expect(server.coordinator.config.experiment_dir).toBe(join(directory.path, "experiment"));
  });

  it("counts claims per connection and caps the distinct unkeyed claimers server-wide", async () => {
    // Invented client ids on one kept-alive connection: the connection's count stops them.
    const oneSocket = new Agent({ keepAlive: true, maxSockets: 1 });
    const granted: Array<Record<string, unknown>> = [];
    for (let index = 0; index < 10; index += 1) {
      const answer = await post(`${server.url}/claim_episode`, JSON.stringify({ client_uuid: `invented-${index}` }), oneSocket);
      if (answer.body.success === true) granted.push(answer.body);
      else count("claims under invented ids", answer.status === 429);
    }
    expect(granted).toHaveLength(2);
    oneSocket.destroy();
    // Invented ids on fresh connections: the server-wide cap on unkeyed claimers stops them
    // (2 claimers hold episodes already; the cap is 4).
    const spread: Array<Record<string, unknown>> = [];
    for (let index = 0; index < 10; index += 1) {
      const answer = await post(`${server.url}/claim_episode`, JSON.stringify({ client_uuid: `spread-${index}` }), false);
      if (answer.body.success === true) spread.push(answer.body);
      else {
        count("claims under invented ids", answer.status === 429);
        expect(String(answer.body.detail)).toContain("max_unkeyed_claimers");
      }
    }
    expect(spread).toHaveLength(2);
    // A client that already holds an episode may still claim (up to its own cap).
    const again = await post(`${server.url}/claim_episode`, JSON.stringify({ client_uuid: String(spread[0]!.client_uuid) }), false);
    expect(again.body.success).toBe(true);
    for (const claim of [...granted, ...spread, again.body])
      await rawRequest(`${server.url}/abort_episode`, {
        body: JSON.stringify({ client_uuid: claim.client_uuid, episode_uuid: claim.episode_uuid }),
        headers: { authorization: `Bearer ${claim.openai_api_key}` },
      });
    expect(server.coordinator.registry.runningCount).toBe(0);
  });

  it("with a token set, refuses every claim that does not carry it", async () => {
    const tokenDirectory = await temporaryDirectory("swarm-abuse-token");
    const token = "a-token-for-the-abuse-test-0123456789";
    const guarded = await startSwarmServer({
      config: parseSwarmConfig("port: 0\n", { baseDirectory: tokenDirectory.path }),
      adminToken: token,
      logger: silentLogger,
    });
    try {
      await waitForState(new SwarmClient({ url: guarded.url }), "ENGINE.ROLLING");
      for (let index = 0; index < 64; index += 1) {
        const answer = await rawRequest(`${guarded.url}/claim_episode`, { body: JSON.stringify({ client_uuid: `invented-${index}` }) });
        count("claims without the token (token set)", answer.status === 401);
      }
      expect(guarded.coordinator.registry.runningCount).toBe(0);
      // The SDK with the token (as a worker gives it, A3R_SWARM_ADMIN_TOKEN) claims.
      const honest = new SwarmClient({ url: guarded.url, adminToken: token });
      const episode = await honest.beginEpisode();
      await honest.endEpisode("t", episode.episodeUuid, { reward: 1 });
    } finally {
      await guarded.close();
      await tokenDirectory.remove();
    }
    const lines = [...tally].map(([group, { tried, refused }]) => `${group}: ${refused}/${tried} refused`);
    console.log(`token-less server abuse (tried/refused):\n${lines.join("\n")}`);
    for (const [group, { tried, refused }] of tally) expect(refused, group).toBe(tried);
  });
});
