import { connect, type Socket } from "node:net";

/**
 * Plain-HTTP/1.1 requests over pooled keep-alive sockets, for the upstream of every proxied
 * completion. node:http's client (ClientRequest, Agent, IncomingMessage: a stream, several
 * event hops and a socket handover per request) was about a third of the swarm server's
 * CPU per proxied completion (bench/gateway.bench.ts, profiled with perf); this writes
 * one request string and parses the answer from the socket's own `data` events.
 *
 * Parsed: the status line, headers (up to `maxHeadBytes`), bodies framed by
 * content-length, by chunked transfer-encoding, or by the connection's close; 1xx answers
 * are skipped. A socket goes back to the pool (last in, first out) only after a complete
 * answer that allows keep-alive. Every step scans each byte once.
 *
 * Not part of it: TLS (upstream-http.ts uses node:https for https: URLs), request bodies
 * other than one string, compressed bodies (none is asked for), proxies, pipelining, and
 * retries (upstream-http.ts retries a request that met a pooled connection already closed).
 */

export interface Http1Answer {
  status: number;
  text: string;
}

/** An error on a pooled socket before any answer byte: the upstream had closed it while idle. */
export interface PoolError extends Error {
  code?: string;
  reusedSocket?: boolean;
}

const crlf = Buffer.from("\r\n");
const headEnd = Buffer.from("\r\n\r\n");
const maxHeadBytes = 64 * 1024;
const maxChunkLineBytes = 4096;

export class Http1Pool {
  readonly #idle = new Map<string, Socket[]>();
  readonly #all = new Set<Socket>();
  readonly #idleTimeoutMs: number;

  constructor(options: { idleTimeoutMs: number }) {
    this.#idleTimeoutMs = options.idleTimeoutMs;
  }

  /** `head` holds the header lines after Host, each ending in CRLF; the answer is fully received when this resolves. */
  send(url: URL, method: string, head: string, payload: string | undefined, signal: AbortSignal | undefined): Promise<Http1Answer> {
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const port = Number(url.port || 80);
    const key = `${host}:${port}`;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      let socket = this.#takeIdle(key);
      const reused = socket !== undefined;
      if (!socket) socket = this.#open(host, port);
      const reader = new AnswerReader(method);
      let settled = false;
      const finish = (error: Error | undefined, answer?: Http1Answer): void => {
        if (settled) return;
        settled = true;
        socket.off("data", onData);
        socket.off("error", onError);
        socket.off("close", onClose);
        socket.off("timeout", onTimeout);
        signal?.removeEventListener("abort", onAbort);
        if (error) {
          socket.destroy();
          reject(error);
          return;
        }
        if (reader.keepAlive && !reader.extraBytes) this.#release(key, socket);
        else socket.destroy();
        resolve(answer!);
      };
      const onData = (chunk: Buffer): void => {
        let done: boolean;
        try {
          done = reader.push(chunk);
        } catch (error) {
          finish(error as Error);
          return;
        }
        if (done) finish(undefined, { status: reader.status, text: reader.text() });
      };
      const onError = (error: PoolError): void => {
        if (!reader.started && reused) error.reusedSocket = true;
        finish(reader.started ? midAnswer(reader) : error);
      };
      const onClose = (): void => {
        if (reader.closeEnds()) finish(undefined, { status: reader.status, text: reader.text() });
        else if (reader.started) finish(midAnswer(reader));
        else finish(Object.assign(new Error("socket hang up"), { code: "ECONNRESET", reusedSocket: reused }));
      };
      const onTimeout = (): void => finish(new Error(`no data from the upstream for ${this.#idleTimeoutMs / 1000} s`));
      const onAbort = (): void => finish(new Error("aborted by the caller"));
      socket.on("data", onData);
      socket.on("error", onError);
      socket.on("close", onClose);
      socket.on("timeout", onTimeout);
      signal?.addEventListener("abort", onAbort, { once: true });
      const length = payload === undefined ? "" : `content-length: ${Buffer.byteLength(payload)}\r\n`;
      socket.ref();
      socket.write(`${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n${head}${length}connection: keep-alive\r\n\r\n${payload ?? ""}`);
    });
  }

  /** Destroys every socket; requests in flight fail. */
  close(): void {
    for (const socket of this.#all) socket.destroy();
    this.#all.clear();
    this.#idle.clear();
  }

  #open(host: string, port: number): Socket {
    const socket = connect({ host, port, noDelay: true });
    socket.setTimeout(this.#idleTimeoutMs);
    this.#all.add(socket);
    socket.once("close", () => this.#all.delete(socket));
    return socket;
  }

  #takeIdle(key: string): Socket | undefined {
    const idle = this.#idle.get(key);
    while (idle && idle.length > 0) {
      const socket = idle.pop()!;
      const retire = idleRetirement.get(socket);
      if (retire) socket.off("data", retire).off("error", retire).off("timeout", retire).off("close", retire);
      if (!socket.destroyed) return socket;
    }
    return undefined;
  }

  /** Back to the pool, unreferenced (an idle pool keeps no process alive); anything the socket then does retires it. */
  #release(key: string, socket: Socket): void {
    const idle = this.#idle.get(key) ?? this.#idle.set(key, []).get(key)!;
    let retire = idleRetirement.get(socket);
    if (!retire) {
      // Made once per socket: an idle socket that reads, fails, times out or closes leaves the pool.
      retire = (): void => {
        socket.destroy();
        const index = idle.indexOf(socket);
        if (index >= 0) idle.splice(index, 1);
      };
      idleRetirement.set(socket, retire);
    }
    socket.on("data", retire).on("error", retire).on("timeout", retire).on("close", retire);
    socket.unref();
    idle.push(socket);
  }
}

const idleRetirement = new WeakMap<Socket, () => void>();

function midAnswer(reader: AnswerReader): Error {
  return new Error(`the upstream closed the connection in the middle of its answer${reader.status ? ` (status ${reader.status})` : ""}`);
}

/** One answer's bytes as they arrive: head, then the body in the framing the head names. */
class AnswerReader {
  status = 0;
  keepAlive = false;
  extraBytes = false;
  /** Any byte of an answer has arrived (a failure after that is not a stale connection). */
  started = false;
  #head: Buffer | undefined;
  #mode: "head" | "length" | "chunked" | "close" | "done" = "head";
  #remaining = 0;
  #body: Buffer[] = [];
  #chunked: ChunkedDecoder | undefined;

  constructor(private readonly method: string) {}

  /** Feeds a chunk; true once the answer is complete. */
  push(chunk: Buffer): boolean {
    this.started = true;
    let rest: Buffer | undefined = chunk;
    while (rest && rest.length > 0) {
      if (this.#mode === "head") rest = this.#pushHead(rest);
      else if (this.#mode === "length") {
        const take = Math.min(this.#remaining, rest.length);
        this.#body.push(rest.subarray(0, take));
        this.#remaining -= take;
        rest = rest.subarray(take);
        if (this.#remaining === 0) this.#mode = "done";
      } else if (this.#mode === "chunked") {
        rest = this.#chunked!.push(rest, this.#body);
        if (this.#chunked!.done) this.#mode = "done";
      } else if (this.#mode === "close") {
        this.#body.push(rest);
        rest = undefined;
      } else {
        // Bytes past the answer: the connection is not reused.
        this.extraBytes = true;
        rest = undefined;
      }
    }
    return this.#mode === "done";
  }

  /** The connection's close completes an answer framed by it. */
  closeEnds(): boolean {
    return this.#mode === "close";
  }

  text(): string {
    return this.#body.length === 1 ? this.#body[0]!.toString("utf8") : Buffer.concat(this.#body).toString("utf8");
  }

  /** Returns what follows the head, or undefined while the head is incomplete. */
  #pushHead(chunk: Buffer): Buffer | undefined {
    const previous = this.#head?.length ?? 0;
    const head = this.#head ? Buffer.concat([this.#head, chunk]) : chunk;
    const end = head.indexOf(headEnd, Math.max(0, previous - 3));
    if (end < 0) {
      if (head.length > maxHeadBytes) throw new Error(`the upstream's answer head exceeds ${maxHeadBytes} bytes`);
      this.#head = head;
      return undefined;
    }
    if (end > maxHeadBytes) throw new Error(`the upstream's answer head exceeds ${maxHeadBytes} bytes`);
    this.#head = undefined;
    this.#readHead(head.toString("latin1", 0, end));
    return head.subarray(end + 4);
  }

  #readHead(text: string): void {
    const lines = text.split("\r\n");
    const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]!);
    if (!statusLine) throw new Error(`the upstream did not answer in HTTP/1.x: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
    const status = Number(statusLine[2]);
    // 1xx: an interim answer; the real one follows.
    if (status >= 100 && status < 200) return;
    this.status = status;
    let length: number | undefined;
    let chunked = false;
    let encoded = false;
    let connection = "";
    for (let index = 1; index < lines.length; index += 1) {
      const line = lines[index]!;
      const colon = line.indexOf(":");
      if (colon <= 0) throw new Error(`the upstream sent a malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value)))
          throw new Error(`the upstream sent an invalid content-length: ${JSON.stringify(value.slice(0, 40))}`);
        length = Number(value);
      } else if (name === "transfer-encoding") {
        encoded = true;
        chunked = value.toLowerCase().split(",").pop()!.trim() === "chunked";
      } else if (name === "connection") connection += `${value.toLowerCase()},`;
    }
    const http10 = statusLine[1] === "0";
    this.keepAlive = http10 ? /(^|,)\s*keep-alive\s*,/.test(connection) : !/(^|,)\s*close\s*,/.test(connection);
    if (this.method === "HEAD" || status === 204 || status === 304) this.#mode = "done";
    else if (encoded) {
      if (chunked) {
        this.#mode = "chunked";
        this.#chunked = new ChunkedDecoder();
      } else this.#closeFramed();
    } else if (length !== undefined) {
      this.#remaining = length;
      this.#mode = length === 0 ? "done" : "length";
    } else this.#closeFramed();
  }

  #closeFramed(): void {
    this.#mode = "close";
    this.keepAlive = false;
  }
}

/** The chunked transfer coding: size line, data, CRLF, ..., a zero size, trailers, an empty line. */
class ChunkedDecoder {
  done = false;
  #state: "size" | "data" | "data-end" | "trailer" = "size";
  #line: Buffer | undefined;
  #remaining = 0;

  /** Appends decoded data to `body`; returns bytes past the end of the body, if any. */
  push(chunk: Buffer, body: Buffer[]): Buffer | undefined {
    let rest = chunk;
    while (rest.length > 0 && !this.done) {
      if (this.#state === "data") {
        const take = Math.min(this.#remaining, rest.length);
        body.push(rest.subarray(0, take));
        this.#remaining -= take;
        rest = rest.subarray(take);
        if (this.#remaining === 0) this.#state = "data-end";
        continue;
      }
      // size, data-end and trailer states read one CRLF-terminated line.
      const previous = this.#line?.length ?? 0;
      const line = this.#line ? Buffer.concat([this.#line, rest]) : rest;
      const end = line.indexOf(crlf, Math.max(0, previous - 1));
      if (end < 0) {
        if (line.length > maxChunkLineBytes) throw new Error("the upstream sent a chunked body with an overlong line");
        this.#line = line;
        return undefined;
      }
      this.#line = undefined;
      rest = line.subarray(end + 2);
      const text = line.toString("latin1", 0, end);
      if (this.#state === "size") {
        const size = /^([0-9a-fA-F]{1,12})[ \t]*(;.*)?$/.exec(text);
        if (!size) throw new Error(`the upstream sent an invalid chunk size: ${JSON.stringify(text.slice(0, 40))}`);
        this.#remaining = Number.parseInt(size[1]!, 16);
        this.#state = this.#remaining === 0 ? "trailer" : "data";
      } else if (this.#state === "data-end") {
        if (text !== "") throw new Error("the upstream sent a chunk longer than its size");
        this.#state = "size";
      } else if (text === "") this.done = true;
    }
    return rest.length > 0 ? rest : undefined;
  }
}
