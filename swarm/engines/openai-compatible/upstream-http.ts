import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { EngineError } from "../port/engine-error.ts";
import { Http1Pool } from "./http1-pool.ts";

/** What the engine reads of an upstream answer; the body is already fully received. */
export interface UpstreamResponse {
  status: number;
  ok: boolean;
  text(): Promise<string>;
}

/**
 * JSON to the upstream on keep-alive connections: http: URLs through Http1Pool (one write
 * and the socket's own reads per request; node:http's client cost the swarm server about
 * a third of its CPU per proxied completion), https: URLs through node:https. With Node's
 * built-in `fetch` (undici: web streams, a Request clone and an AbortController per call)
 * the swarm server spent about 2.5 times the CPU per proxied completion of node:http
 * (bench/gateway.bench.ts).
 *
 * A connection failure is EngineError ENGINE_UPSTREAM_UNAVAILABLE, and so is silence from
 * the upstream for `idleTimeoutMs` (default 300 s, fetch's limit for the headers and between
 * body chunks); an abort through the signal rejects with the signal's reason, as fetch
 * does. A request that meets a pooled connection the upstream closed while it sat idle (the
 * keep-alive race) is sent once more on a fresh one: the upstream never saw it.
 *
 * Not part of it: retries of requests the upstream did receive, redirects, compressed
 * bodies (no accept-encoding is sent), streaming bodies, and proxies from the environment.
 */
export class UpstreamHttp {
  readonly #pool: Http1Pool;
  /** Header lines after Host, for Http1Pool. */
  readonly #jsonHead: string;
  readonly #plainHead: string;
  readonly #httpAgent: HttpAgent;
  readonly #httpsAgent: HttpsAgent;
  readonly #apiKey: string | undefined;
  readonly #idleTimeoutMs: number;

  constructor(options: { apiKey?: string | undefined; maxSockets?: number; idleTimeoutMs?: number } = {}) {
    this.#apiKey = options.apiKey;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 300_000;
    // Generous maxSockets: every concurrent episode may hold one completion in flight. The
    // silence limit is set on the agent, once per socket, not on every request.
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 1024, scheduling: "lifo" as const, timeout: this.#idleTimeoutMs };
    this.#httpAgent = new HttpAgent(agentOptions);
    this.#pool = new Http1Pool({ idleTimeoutMs: this.#idleTimeoutMs });
    // Written into the request as it is: a key with a line break would smuggle headers.
    if (options.apiKey !== undefined && /[^\t\x20-\x7e]/.test(options.apiKey))
      throw new EngineError("ENGINE_UPSTREAM_UNAVAILABLE", "the upstream apiKey contains a character not allowed in an HTTP header", "check model.apiKey");
    this.#plainHead = options.apiKey ? `authorization: Bearer ${options.apiKey}\r\n` : "";
    this.#jsonHead = `content-type: application/json\r\n${this.#plainHead}`;
    this.#httpsAgent = new HttpsAgent(agentOptions);
  }

  async request(method: string, url: URL, body?: unknown, signal?: AbortSignal): Promise<UpstreamResponse> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    try {
      return await this.#send(method, url, payload, signal).catch((error: unknown) => {
        if (isStaleConnection(error) && !signal?.aborted) return this.#send(method, url, payload, signal);
        throw error;
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason ?? error;
      throw new EngineError(
        "ENGINE_UPSTREAM_UNAVAILABLE",
        `${method} ${url.href} failed: ${error instanceof Error ? error.message : String(error)}`,
        "is the upstream server running and reachable?",
        { cause: error },
      );
    }
  }

  /** Closes pooled connections; requests in flight fail. */
  close(): void {
    this.#pool.close();
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
  }

  #send(method: string, url: URL, payload: string | undefined, signal: AbortSignal | undefined): Promise<UpstreamResponse> {
    const https = url.protocol === "https:";
    if (!https) {
      return this.#pool.send(url, method, payload === undefined ? this.#plainHead : this.#jsonHead, payload, signal).then(({ status, text }) => ({
        status,
        ok: status >= 200 && status < 300,
        text: () => Promise.resolve(text),
      }));
    }
    const headers: Record<string, string | number> =
      payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const request: ClientRequest = (https ? httpsRequest : httpRequest)(
        {
          agent: https ? this.#httpsAgent : this.#httpAgent,
          hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
          port: url.port || (https ? 443 : 80),
          path: `${url.pathname}${url.search}`,
          method,
          headers,
        },
        (response: IncomingMessage) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => {
            const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
            const status = response.statusCode ?? 0;
            settle();
            resolve({ status, ok: status >= 200 && status < 300, text: () => Promise.resolve(text) });
          });
          // node:http destroys an unfinished response with an error when its socket closes.
          response.on("error", () => fail(new Error(`the upstream closed the connection in the middle of its answer (status ${response.statusCode})`)));
        },
      );
      // A plain listener, removed when settled: the `signal` request option costs several
      // times as much per request (it wraps the listener in a disposable).
      const onAbort = (): void => void request.destroy(new Error("aborted by the caller"));
      const settle = (): void => signal?.removeEventListener("abort", onAbort);
      const fail = (error: Error): void => {
        settle();
        reject(error);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      request.on("error", (error: Error) => fail(signal?.aborted ? error : Object.assign(error, { reusedSocket: request.reusedSocket })));
      request.on("timeout", () => request.destroy(new Error(`no data from the upstream for ${this.#idleTimeoutMs / 1000} s`)));
      request.end(payload);
    });
  }
}

/** The upstream closed a pooled idle connection just as it was reused; nothing reached it. */
function isStaleConnection(error: unknown): boolean {
  const failure = error as { code?: string; reusedSocket?: boolean };
  return failure.reusedSocket === true && (failure.code === "ECONNRESET" || failure.code === "EPIPE");
}
