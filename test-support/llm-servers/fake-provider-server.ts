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
    this.requests.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, body });
    const next = this.pending.shift();
    // 400 rather than 5xx, so that an SDK does not retry and hide a test's mistake.
    const answer: FakeResponse = next ?? { status: 400, body: { error: { message: "fake provider server: no response queued" } } };
    const send = (): void => {
      if (response.destroyed) return;
      response.writeHead(answer.status ?? 200, { "content-type": "application/json", ...answer.headers });
      response.end(JSON.stringify(answer.body));
    };
    if (!answer.delayMs) return send();
    const timer = setTimeout(send, answer.delayMs);
    response.on("close", () => clearTimeout(timer));
  }
}

const fixtureFolder = fileURLToPath(new URL("../../llm/__fixtures__/", import.meta.url));

/** Reads llm/__fixtures__/<provider>/<name>.json: a FakeResponse. */
export async function loadFixture(provider: string, name: string): Promise<FakeResponse> {
  return JSON.parse(await readFile(`${fixtureFolder}${provider}/${name}.json`, "utf8")) as FakeResponse;
}
