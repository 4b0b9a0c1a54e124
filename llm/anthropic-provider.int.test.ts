import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createChatModel } from "./factory.ts";
import { conformanceAnswers, conformanceSchema, conformanceTool, registerProviderConformance } from "./provider-conformance.test-support.ts";
import { httpProviderHarness } from "../test-support/llm-servers/http-provider-harness.ts";
import { loadFixture } from "../test-support/llm-servers/fake-provider-server.ts";
import { InMemoryUsageSink } from "./usage-sink.ts";

const apiKey = "sk-ant-conformance-secret-0123456789";

registerProviderConformance("anthropic", httpProviderHarness("anthropic", apiKey));

describe("anthropic wire format", () => {
  const harness = httpProviderHarness("anthropic", apiKey);
  beforeAll(() => harness.setUp?.());
  afterAll(() => harness.tearDown?.());

  async function model(options: { maxRetries?: number } = {}) {
    return createChatModel(
      { provider: "anthropic", model: "claude-sonnet-4-6", apiKey, baseUrl: harness.baseUrl(), maxRetries: options.maxRetries ?? 0 },
      { sink: new InMemoryUsageSink(), warn: () => {} },
    );
  }

  it("posts to /v1/messages with the key, the model, and the system prompt marked for caching", async () => {
    harness.server().play([await loadFixture("anthropic", "plain-text")]);
    await (await model()).complete({ system: "Long skill text.", messages: [{ role: "user", content: "Hi" }], maxTokens: 64, temperature: 0.2 });
    const [request] = harness.server().requests;
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe("/v1/messages");
    const sentKey = request?.headers["x-api-key"] ?? request?.headers.authorization;
    expect(String(sentKey)).toContain(apiKey);
    expect(request?.body).toMatchObject({
      model: "claude-sonnet-4-6",
      max_tokens: 64,
      temperature: 0.2,
      system: [{ type: "text", text: "Long skill text.", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "Hi" }],
    });
  });

  it("asks for a structured answer through a forced call of a tool whose schema is the answer's", async () => {
    harness.server().play([await loadFixture("anthropic", "structured-valid")]);
    const result = await (await model()).complete({
      messages: [{ role: "user", content: "Plan" }],
      schema: conformanceSchema,
      schemaName: conformanceAnswers.schemaName,
      maxTokens: 64,
    });
    expect(result.text).toBe(JSON.stringify(conformanceAnswers.structured));
    expect(result.stopReason).toBe("tool_use");
    const body = harness.server().requests[0]?.body as Record<string, unknown>;
    expect(body.tool_choice).toEqual({ type: "tool", name: "stage_plan" });
    expect(body.tools).toEqual([
      {
        name: "stage_plan",
        description: expect.any(String),
        input_schema: {
          type: "object",
          properties: {
            hypothesis: { type: "string" },
            learningRate: { type: "number", exclusiveMinimum: 0 },
            stages: { type: "array", items: { type: "string" }, minItems: 1 },
          },
          required: ["hypothesis", "learningRate", "stages"],
          additionalProperties: false,
        },
      },
    ]);
  });

  it("sends the invalid answer back as the assistant's turn in the repair round", async () => {
    harness.server().play([await loadFixture("anthropic", "structured-invalid"), await loadFixture("anthropic", "structured-valid")]);
    await (await model()).complete({
      messages: [{ role: "user", content: "Plan" }],
      schema: conformanceSchema,
      schemaName: conformanceAnswers.schemaName,
      maxTokens: 64,
    });
    const repair = harness.server().requests[1]?.body as { messages: Array<{ role: string; content: string }> };
    expect(repair.messages).toHaveLength(3);
    expect(repair.messages[1]).toEqual({ role: "assistant", content: JSON.stringify(conformanceAnswers.invalidStructured) });
    expect(repair.messages[2]?.role).toBe("user");
    expect(repair.messages[2]?.content).toMatch(/stages/);
  });

  it("converts tool definitions and lets the model choose any tool when a schema is asked too", async () => {
    harness.server().play([await loadFixture("anthropic", "tool-call")]);
    const result = await (await model()).complete({
      messages: [{ role: "user", content: "Look" }],
      tools: [conformanceTool],
      schema: z.object({ verdict: z.string() }),
      maxTokens: 64,
    });
    expect(result.toolCalls).toEqual([{ id: "toolu_01metrics", name: "read_metrics", input: { runId: "s1-lr-3e-6", last: 5 } }]);
    expect(result.parsed).toBeUndefined();
    const body = harness.server().requests[0]?.body as { tools: Array<{ name: string; input_schema: unknown }>; tool_choice: unknown };
    expect(body.tool_choice).toEqual({ type: "any" });
    expect(body.tools.map((tool) => tool.name)).toEqual(["read_metrics", "answer"]);
    expect(body.tools[0]?.input_schema).toMatchObject({ type: "object", required: ["runId", "last"] });
  });

  it("leaves retries to the SDK: a 500 then a success is one booked call", async () => {
    const failure = await loadFixture("anthropic", "error-500");
    harness.server().play([{ ...failure, headers: { ...failure.headers, "retry-after-ms": "1" } }, await loadFixture("anthropic", "plain-text")]);
    const sink = new InMemoryUsageSink();
    const retrying = await createChatModel({ provider: "anthropic", apiKey, baseUrl: harness.baseUrl(), maxRetries: 1 }, { sink, warn: () => {} });
    const result = await retrying.complete({ messages: [{ role: "user", content: "Hi" }], maxTokens: 64 });
    expect(result.text).toBe(conformanceAnswers.plainText);
    expect(harness.server().requests).toHaveLength(2);
    expect(sink.records).toMatchObject([{ ok: true }]);
  });

  it("maps a refused connection to LLM_UNAVAILABLE", async () => {
    const sink = new InMemoryUsageSink();
    const closed = await createChatModel({ provider: "anthropic", apiKey, baseUrl: "http://127.0.0.1:9", maxRetries: 0 }, { sink, warn: () => {} });
    await expect(closed.complete({ messages: [{ role: "user", content: "Hi" }], maxTokens: 8 })).rejects.toMatchObject({
      code: "LLM_UNAVAILABLE",
    });
    expect(sink.records).toMatchObject([{ ok: false, errorCode: "LLM_UNAVAILABLE" }]);
  });
});
