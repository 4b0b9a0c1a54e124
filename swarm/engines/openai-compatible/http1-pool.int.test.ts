import { createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Http1Pool } from "./http1-pool.ts";

/**
 * Http1Pool against a raw TCP upstream that writes exact bytes, so each framing the pool
 * must read (content-length, chunked, close-framed, 1xx first, split at awkward places) and
 * each reason not to reuse a connection is produced as such.
 */

interface RawUpstream {
  url: URL;
  /** The request heads received, one per request. */
  requests: string[];
  connections: Socket[];
  server: Server;
}

/** `answer(index, socket)` writes the answer to the index-th request (0-based, over all connections). */
async function rawUpstream(answer: (index: number, socket: Socket) => void): Promise<RawUpstream> {
  const requests: string[] = [];
  const connections: Socket[] = [];
  const server = createServer((socket) => {
    connections.push(socket);
    let buffered = "";
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      for (;;) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        requests.push(Buffer.from(`${head}\r\n\r\n${buffered.slice(end + 4, end + 4 + length)}`, "latin1").toString("utf8"));
        buffered = buffered.slice(end + 4 + length);
        answer(requests.length - 1, socket);
      }
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/v1/chat/completions?x=1`), requests, connections, server };
}

/** Writes `text` in pieces of `size` bytes, a few milliseconds apart, so the pool sees every split. */
function trickle(socket: Socket, text: string, size: number): void {
  const bytes = Buffer.from(text);
  let offset = 0;
  const next = (): void => {
    if (offset >= bytes.length || socket.destroyed) return;
    socket.write(bytes.subarray(offset, offset + size));
    offset += size;
    setTimeout(next, 1);
  };
  next();
}

describe("Http1Pool", () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });
  function setup(upstream: RawUpstream, idleTimeoutMs = 5000): Http1Pool {
    const pool = new Http1Pool({ idleTimeoutMs });
    cleanups.push(() => {
      pool.close();
      for (const socket of upstream.connections) socket.destroy();
      upstream.server.close();
    });
    return pool;
  }

  it("writes one request with host, headers, length and body, and reads content-length answers on one kept connection", async () => {
    const upstream = await rawUpstream((index, socket) => {
      const body = JSON.stringify({ index, word: "bleu €" });
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    const pool = setup(upstream);
    for (let index = 0; index < 3; index += 1) {
      const answer = await pool.send(upstream.url, "POST", "content-type: application/json\r\n", '{"q":"ü"}', undefined);
      expect(answer).toEqual({ status: 200, text: JSON.stringify({ index, word: "bleu €" }) });
    }
    expect(upstream.connections).toHaveLength(1);
    expect(upstream.requests[0]).toBe(
      `POST /v1/chat/completions?x=1 HTTP/1.1\r\nhost: ${upstream.url.host}\r\ncontent-type: application/json\r\ncontent-length: 10\r\nconnection: keep-alive\r\n\r\n{"q":"ü"}`,
    );
  });

  it("reads chunked answers (with extensions and trailers) and interim 1xx answers, split byte by byte", async () => {
    const upstream = await rawUpstream((index, socket) => {
      const chunked = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{"a"\r\n8\r\n:"b€"}\r\n0\r\nX-Trailer: t\r\n\r\n';
      trickle(socket, index === 0 ? `HTTP/1.1 100 Continue\r\n\r\n${chunked}` : chunked, index === 0 ? 1 : 7);
    });
    const pool = setup(upstream);
    expect(await pool.send(upstream.url, "POST", "", "{}", undefined)).toEqual({ status: 200, text: '{"a":"b€"}' });
    expect(await pool.send(upstream.url, "POST", "", "{}", undefined)).toEqual({ status: 200, text: '{"a":"b€"}' });
    expect(upstream.connections).toHaveLength(1);
  });

  it("reads an answer framed by the connection's close, and opens a new connection after one that said close", async () => {
    const upstream = await rawUpstream((index, socket) => {
      if (index === 0) socket.end("HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n\r\nno model loaded");
      else if (index === 1) socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
      else if (index === 2) socket.write("HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nold!");
      else socket.write("HTTP/1.1 204 No Content\r\n\r\n");
    });
    const pool = setup(upstream);
    expect(await pool.send(upstream.url, "GET", "", undefined, undefined)).toEqual({ status: 502, text: "no model loaded" });
    expect(await pool.send(upstream.url, "GET", "", undefined, undefined)).toEqual({ status: 200, text: "ok" });
    expect(await pool.send(upstream.url, "GET", "", undefined, undefined)).toEqual({ status: 200, text: "old!" });
    expect(await pool.send(upstream.url, "GET", "", undefined, undefined)).toEqual({ status: 204, text: "" });
    // Close-framed, connection: close and HTTP/1.0 without keep-alive are never reused.
    expect(upstream.connections).toHaveLength(4);
  });

  it("refuses what is not HTTP/1.x, a bad content-length and an endless head, and drops those connections", async () => {
    const upstream = await rawUpstream((index, socket) => {
      if (index === 0) socket.write("SSH-2.0-OpenSSH_9.6\r\n\r\n");
      else if (index === 1) socket.write("HTTP/1.1 200 OK\r\nContent-Length: 12, 13\r\n\r\n");
      else socket.write(`HTTP/1.1 200 OK\r\nX-Long: ${"a".repeat(70 * 1024)}`);
    });
    const pool = setup(upstream);
    await expect(pool.send(upstream.url, "GET", "", undefined, undefined)).rejects.toThrow(/did not answer in HTTP\/1\.x: "SSH-2\.0/);
    await expect(pool.send(upstream.url, "GET", "", undefined, undefined)).rejects.toThrow(/invalid content-length: "12, 13"/);
    await expect(pool.send(upstream.url, "GET", "", undefined, undefined)).rejects.toThrow(/head exceeds 65536 bytes/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(upstream.connections.every((socket) => socket.destroyed)).toBe(true);
  });

  it("marks a failure on a pooled connection before any answer byte as reusedSocket (the caller retries), and a cut answer as such", async () => {
    const upstream = await rawUpstream((index, socket) => {
      if (index === 0) socket.write("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na");
      else if (index === 1) socket.destroy();
      else {
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{");
        setTimeout(() => socket.destroy(), 20);
      }
    });
    const pool = setup(upstream);
    await pool.send(upstream.url, "GET", "", undefined, undefined);
    await expect(pool.send(upstream.url, "GET", "", undefined, undefined)).rejects.toMatchObject({ code: "ECONNRESET", reusedSocket: true });
    await expect(pool.send(upstream.url, "GET", "", undefined, undefined)).rejects.toThrow("in the middle of its answer (status 200)");
  });
});
