import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

/** One canned HTTP answer, as stored in llm/__fixtures__/<provider>/<name>.json. */
export interface FakeResponse {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Answer only after this long (exercises deadlines and aborts). */
  delayMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * A local stand-in for a provider's HTTP API: replays queued responses in order and
 * records what it was sent, so tests check both directions of the wire format. Runs on
 * 127.0.0.1 and a free port; nothing leaves the machine.
 */
export class FakeProviderServer {
  readonly requests: RecordedRequest[] = [];
  /** What GET /v1/models lists (OpenAI's shape; vLLM adds `max_model_len`). */
  models: Record<string, unknown>[] = [];
  private pending: FakeResponse[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeProviderServer> {
    let instance: FakeProviderServer | undefined;
    const server = createServer((request, response) => {
      void instance?.handle(request, response);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    instance = new FakeProviderServer(server, `http://127.0.0.1:${port}`);
    return instance;
  }

  /** Replaces what is left to answer; recorded requests are cleared too. */
  play(responses: FakeResponse[]): void {
    this.pending = [...responses];
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = text;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      // Keep the raw text: a test asserting on the body will show it.
    }
    // The model list is asked by a planner fitting its prompts; it is answered from
    // `models` and neither consumes a queued answer nor counts as a request.
    if (request.method === "GET" && /\/models$/.test(request.url ?? "")) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ object: "list", data: this.models }));
      return;
    }
    this.requests.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, body });
    const next = this.pending.shift();
    // 400 rather than 5xx, so that an SDK does not retry and hide a test's mistake.
    const answer: FakeResponse = next ?? { status: 400, body: { error: { message: "fake provider server: no response queued" } } };
    const streams = (body as { stream?: unknown } | undefined)?.stream === true && (answer.status ?? 200) === 200;
    const send = (): void => {
      if (response.destroyed) return;
      if (streams) {
        sendEvents(response, answer.body);
        return;
      }
      response.writeHead(answer.status ?? 200, { "content-type": "application/json", ...answer.headers });
      response.end(JSON.stringify(answer.body));
    };
    if (!answer.delayMs) return send();
    const timer = setTimeout(send, answer.delayMs);
    response.on("close", () => clearTimeout(timer));
  }
}

/**
 * An OpenAI chat completion replayed as the event stream a streaming request gets: the
 * content in chunks of a few characters, then the finish reason, then the usage.
 */
function sendEvents(response: ServerResponse, completion: unknown): void {
  const body = completion as { id?: string; model?: string; choices?: { message?: { content?: string | null }; finish_reason?: string }[]; usage?: unknown };
  const choice = body.choices?.[0];
  const content = choice?.message?.content ?? "";
  const base = { id: body.id ?? "chatcmpl-fake", object: "chat.completion.chunk", created: 0, model: body.model ?? "" };
  response.writeHead(200, { "content-type": "text/event-stream" });
  const event = (value: unknown): void => {
    response.write(`data: ${JSON.stringify(value)}\n\n`);
  };
  for (let at = 0; at < content.length; at += 8) {
    event({ ...base, choices: [{ index: 0, delta: { ...(at === 0 ? { role: "assistant" } : {}), content: content.slice(at, at + 8) }, finish_reason: null }] });
  }
  event({ ...base, choices: [{ index: 0, delta: {}, finish_reason: choice?.finish_reason ?? "stop" }] });
  if (body.usage) event({ ...base, choices: [], usage: body.usage });
  response.end("data: [DONE]\n\n");
}

const fixtureFolder = fileURLToPath(new URL("../../llm/__fixtures__/", import.meta.url));

/** Reads llm/__fixtures__/<provider>/<name>.json: a FakeResponse. */
export async function loadFixture(provider: string, name: string): Promise<FakeResponse> {
  return JSON.parse(await readFile(`${fixtureFolder}${provider}/${name}.json`, "utf8")) as FakeResponse;
}
