import type { ConformanceScenario, ProviderHarness } from "../../llm/provider-conformance.test-support.ts";
import { createChatModel } from "../../llm/factory.ts";
import { FakeProviderServer, loadFixture, type FakeResponse } from "./fake-provider-server.ts";

const fixturesOf: Record<ConformanceScenario, string[]> = {
  "plain-text": ["plain-text"],
  "structured-valid": ["structured-valid"],
  "structured-repaired": ["structured-invalid", "structured-valid"],
  "structured-invalid-twice": ["structured-invalid", "structured-invalid"],
  "tool-call": ["tool-call"],
  slow: ["plain-text"],
  "error-401": ["error-401"],
  "error-429": ["error-429"],
  "error-500": ["error-500"],
};

export interface HttpProviderHarness extends ProviderHarness {
  /** The local server, started by setUp. */
  server(): FakeProviderServer;
  baseUrl(): string;
}

/**
 * Plays conformance scenarios for an SDK provider from its recorded responses in
 * llm/__fixtures__/<provider>/, on a local server, with SDK retries off.
 */
export function httpProviderHarness(provider: "anthropic" | "openai", apiKey: string): HttpProviderHarness {
  let server: FakeProviderServer | undefined;
  const running = (): FakeProviderServer => {
    if (!server) throw new Error("the fake provider server is not started: call setUp first");
    return server;
  };
  const baseUrl = (): string => (provider === "openai" ? `${running().url}/v1` : running().url);
  return {
    apiKey,
    server: running,
    baseUrl,
    async setUp() {
      server = await FakeProviderServer.start();
    },
    async tearDown() {
      await server?.close();
    },
    async play(scenario, { sink, timeoutMs }) {
      const responses: FakeResponse[] = await Promise.all(fixturesOf[scenario].map((name) => loadFixture(provider, name)));
      if (scenario === "slow") responses.forEach((response) => (response.delayMs = 5_000));
      running().play(responses);
      const model = await createChatModel(
        { provider, apiKey, baseUrl: baseUrl(), maxRetries: 0, ...(timeoutMs ? { timeoutMs } : {}) },
        { sink, warn: () => {} },
      );
      return { model, shownToModel: () => running().requests.map((request) => JSON.stringify(request.body)) };
    },
  };
}
