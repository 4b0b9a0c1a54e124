import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { EngineError } from "../port/engine-error.ts";
import { UpstreamHttp } from "./upstream-http.ts";

/** A real node:http upstream on a free port; `handle` decides each answer. */
async function startUpstream(
  handle: (request: IncomingMessage, response: ServerResponse, body: string) => void,
): Promise<{ server: Server; url: (path: string) => URL; connections: Socket[] }> {
  const connections: Socket[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => handle(request, response, Buffer.concat(chunks).toString()));
  });
  server.on("connection", (socket: Socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, url: (path) => new URL(`http://127.0.0.1:${port}${path}`), connections };
}

describe("UpstreamHttp", () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });
  function track(upstream: { server: Server }, client: UpstreamHttp): void {
    cleanups.push(() => {
      client.close();
      upstream.server.closeAllConnections();
      upstream.server.close();
    });
  }

  it("sends JSON with the API key and keeps one connection alive across requests", async () => {
    const seen: Array<{ authorization?: string; contentType?: string; body: string }> = [];
    const upstream = await startUpstream((request, response, body) => {
      seen.push({ authorization: request.headers.authorization, contentType: request.headers["content-type"], body });
      response.writeHead(201, { "content-type": "application/json" });
      response.end(JSON.stringify({ echo: body.length, word: "bleu €" }));
    });
    const client = new UpstreamHttp({ apiKey: "secret" });
    track(upstream, client);
    for (let index = 0; index < 3; index += 1) {
      const response = await client.request("POST", upstream.url("/v1/chat/completions"), { index, text: "ü" });
      expect(response).toMatchObject({ status: 201, ok: true });
      expect(JSON.parse(await response.text())).toEqual({ echo: JSON.stringify({ index, text: "ü" }).length, word: "bleu €" });
    }
    expect(seen.map((entry) => JSON.parse(entry.body))).toEqual([0, 1, 2].map((index) => ({ index, text: "ü" })));
    expect(seen.every((entry) => entry.authorization === "Bearer secret" && entry.contentType === "application/json")).toBe(true);
    expect(upstream.connections).toHaveLength(1);
  });

  it("answers a non-2xx status as not ok, with its body", async () => {
    const upstream = await startUpstream((_request, response) => {
      response.writeHead(400, { "content-type": "application/json" });
      response.end('{"error":"no such field"}');
    });
    const client = new UpstreamHttp();
    track(upstream, client);
    const response = await client.request("GET", upstream.url("/v1/models"));
    expect(response.ok).toBe(false);
    expect(response.status).toBe(400);
    expect(await response.text()).toBe('{"error":"no such field"}');
  });

  it("rejects with the signal's reason when aborted, and drops the connection", async () => {
    const upstream = await startUpstream(() => {
      // Never answers: a generation that takes forever.
    });
    const client = new UpstreamHttp();
    track(upstream, client);
    const controller = new AbortController();
    const pending = client.request("POST", upstream.url("/v1/chat/completions"), { messages: [] }, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const reason = new Error("the client went away");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(upstream.connections.every((socket) => socket.destroyed)).toBe(true);
  });

  it("sends a request once more on a fresh connection when the upstream drops a pooled one", async () => {
    let requests = 0;
    const upstream = await startUpstream((request, response) => {
      requests += 1;
      // The second request arrives on the kept-alive connection: close it unanswered, as an
      // upstream does whose idle timeout fired just then.
      if (requests === 2) {
        request.socket.destroy();
        return;
      }
      response.end(`{"request":${requests}}`);
    });
    const client = new UpstreamHttp();
    track(upstream, client);
    await client.request("POST", upstream.url("/v1/chat/completions"), {});
    const second = await client.request("POST", upstream.url("/v1/chat/completions"), {});
    expect(await second.text()).toBe('{"request":3}');
    expect(upstream.connections).toHaveLength(2);
  });

  it("fails with ENGINE_UPSTREAM_UNAVAILABLE when nothing listens, when the answer is cut, and after the idle limit", async () => {
    const refused = new UpstreamHttp();
    const failure = await refused.request("GET", new URL("http://127.0.0.1:9/v1/models")).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EngineError);
    expect(failure).toMatchObject({ code: "ENGINE_UPSTREAM_UNAVAILABLE", message: expect.stringContaining("GET http://127.0.0.1:9/v1/models failed") });

    const upstream = await startUpstream((request, response) => {
      if (request.url === "/cut") {
        response.writeHead(200, { "content-length": "100" });
        response.write('{"choices":');
        setTimeout(() => request.socket.destroy(), 20);
      }
      // Any other path: silence.
    });
    const client = new UpstreamHttp({ idleTimeoutMs: 200 });
    track(upstream, client);
    await expect(client.request("POST", upstream.url("/cut"), {})).rejects.toMatchObject({
      code: "ENGINE_UPSTREAM_UNAVAILABLE",
      message: expect.stringContaining("in the middle of its answer"),
    });
    await expect(client.request("POST", upstream.url("/silent"), {})).rejects.toMatchObject({
      code: "ENGINE_UPSTREAM_UNAVAILABLE",
      message: expect.stringContaining("no data from the upstream for 0.2 s"),
    });
  });
});
