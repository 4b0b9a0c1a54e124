import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SwarmClient } from "../client/index.ts";
import { parseSwarmConfig } from "../config/config.ts";
import { silentLogger } from "./logger.ts";
import { temporaryDirectory, waitForState } from "./server-process.test-support.ts";
import { startSwarmServer, type SwarmServer } from "./swarm-server.ts";

/**
 * A client that goes away mid-completion aborts the upstream request (the gateway's signal
 * is per connection, fired when the socket closes), and a kept-alive connection's later
 * completions are not aborted by the earlier ones. Real swarm server, openai-compatible
 * engine, and a node:http upstream that holds any request whose last message says "hold".
 */
let directory: { path: string; remove(): Promise<void> };
let upstream: Server;
let server: SwarmServer;
const held: Array<{ request: IncomingMessage; closed: boolean }> = [];

beforeAll(async () => {
  directory = await temporaryDirectory("swarm-disconnect");
  upstream = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      if (request.method === "GET") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ object: "list", data: [{ id: "m", object: "model" }] }));
        return;
      }
      const body = JSON.parse(text) as { messages: Array<{ content: string }> };
      if (body.messages.at(-1)?.content === "hold") {
        const entry = { request, closed: false };
        held.push(entry);
        request.socket.once("close", () => (entry.closed = true));
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "blue" }, finish_reason: "stop" }] }));
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const port = (upstream.address() as AddressInfo).port;
  const config = parseSwarmConfig(
    [
      "port: 0",
      "train_batch_size: 1000",
      "model:",
      "  kind: openai-compatible",
      `  base_url: http://127.0.0.1:${port}/v1`,
      "  model: m",
      "  tokenizer: word",
    ].join("\n"),
    { baseDirectory: directory.path },
  );
  server = await startSwarmServer({ config, logger: silentLogger });
  await waitForState(new SwarmClient({ url: server.url }), "ENGINE.ROLLING");
});

afterAll(async () => {
  await server?.close();
  upstream?.closeAllConnections();
  await new Promise((resolve) => (upstream ? upstream.close(resolve) : resolve(undefined)));
  await directory?.remove();
});

/** One chat completion over `agent`; resolves with the status, or with the request's socket once it is sent when `keepOpen`. */
function complete(agent: Agent, baseUrl: string, apiKey: string, content: string): { done: Promise<number>; socket: Promise<Socket> } {
  const url = new URL(`${baseUrl}/chat/completions`);
  const body = JSON.stringify({ messages: [{ role: "user", content }] });
  let socketReady: (socket: Socket) => void = () => undefined;
  const socket = new Promise<Socket>((resolve) => (socketReady = resolve));
  const done = new Promise<number>((resolve, reject) => {
    const request = httpRequest(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), authorization: `Bearer ${apiKey}` },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    request.on("socket", (assigned: Socket) => socketReady(assigned));
    request.on("error", reject);
    request.end(body);
  });
  return { done, socket };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("a client that goes away", () => {
  it("keeps a kept-alive connection's completions running, and aborts the upstream request of one whose socket closed", async () => {
    const client = new SwarmClient({ url: server.url });
    const episode = await client.beginEpisode();
    const recorded = () => server.coordinator.registry.byApiKey(episode.apiKey)!.calls.length;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set<Socket>();
      for (let index = 0; index < 3; index += 1) {
        const call = complete(agent, episode.baseUrl, episode.apiKey, `question ${index}`);
        sockets.add(await call.socket);
        expect(await call.done).toBe(200);
      }
      // One connection carried the three, and none was aborted by the one before.
      expect(sockets.size).toBe(1);
      expect(recorded()).toBe(3);

      const call = complete(agent, episode.baseUrl, episode.apiKey, "hold");
      const socket = await call.socket;
      call.done.catch(() => undefined);
      await until(() => held.length === 1, "the upstream holds the request");
      expect(server.coordinator.registry.byApiKey(episode.apiKey)!.inFlight).toBe(1);
      socket.destroy();
      await until(() => held[0]!.closed, "the upstream request is aborted");
      await until(() => server.coordinator.registry.byApiKey(episode.apiKey)!.inFlight === 0, "nothing is in flight");
      expect(recorded()).toBe(3);

      // The episode goes on over a new connection.
      const after = complete(agent, episode.baseUrl, episode.apiKey, "question 4");
      expect(await after.done).toBe(200);
      expect(recorded()).toBe(4);
    } finally {
      agent.destroy();
      await client.abortEpisode(episode.episodeUuid);
    }
  });
});
