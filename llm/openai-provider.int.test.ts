import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createChatModel } from "./factory.ts";
import { conformanceAnswers, conformanceSchema, conformanceTool, registerProviderConformance } from "./provider-conformance.test-support.ts";
import { httpProviderHarness } from "../test-support/llm-servers/http-provider-harness.ts";
import { loadFixture } from "../test-support/llm-servers/fake-provider-server.ts";
import { InMemoryUsageSink } from "./usage-sink.ts";

const apiKey = "sk-conformance-secret-0123456789";

registerProviderConformance("openai", httpProviderHarness("openai", apiKey));

describe("openai wire format", () => {
  const harness = httpProviderHarness("openai", apiKey);
  beforeAll(() => harness.setUp?.());
  afterAll(() => harness.tearDown?.());

  async function model(extra: { maxTokensField?: "max_tokens" | "max_completion_tokens" } = {}) {
    return createChatModel(
      { provider: "openai", model: "gpt-4.1", apiKey, baseUrl: harness.baseUrl(), maxRetries: 0, ...extra },
      { sink: new InMemoryUsageSink(), warn: () => {} },
    );
  }

  it("posts to /v1/chat/completions with the key, a system message first and max_tokens for a compatible server", async () => {
    harness.server().play([await loadFixture("openai", "plain-text")]);
    await (await model()).complete({ system: "Be brief.", messages: [{ role: "user", content: "Hi" }], maxTokens: 64, temperature: 0 });
    const [request] = harness.server().requests;
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe("/v1/chat/completions");
    expect(request?.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(request?.body).toEqual({
      model: "gpt-4.1",
      max_tokens: 64,
      temperature: 0,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
    });
  });

  it("sends max_completion_tokens when told to", async () => {
    harness.server().play([await loadFixture("openai", "plain-text")]);
    await (await model({ maxTokensField: "max_completion_tokens" })).complete({ messages: [{ role: "user", content: "Hi" }], maxTokens: 64 });
    expect(harness.server().requests[0]?.body).toMatchObject({ max_completion_tokens: 64 });
    expect(harness.server().requests[0]?.body).not.toHaveProperty("max_tokens");
  });

  it("asks for a structured answer with a strict json_schema response format when the schema allows it", async () => {
    harness.server().play([await loadFixture("openai", "structured-valid")]);
    const result = await (await model()).complete({
      messages: [{ role: "user", content: "Plan" }],
      schema: conformanceSchema,
      schemaName: conformanceAnswers.schemaName,
      maxTokens: 64,
    });
    expect(result.parsed).toEqual(conformanceAnswers.structured);
    expect(result.stopReason).toBe("stop");
    expect(harness.server().requests[0]?.body).toMatchObject({
      response_format: {
        type: "json_schema",
        json_schema: {
          name: "stage_plan",
          strict: true,
          schema: {
            type: "object",
            required: ["hypothesis", "learningRate", "stages"],
            additionalProperties: false,
          },
        },
      },
    });
  });

  it("falls back to a non-strict schema when a property is optional, and wraps a non-object answer", async () => {
    harness.server().play([await loadFixture("openai", "plain-text"), await loadFixture("openai", "plain-text")]);
    const optional = z.object({ verdict: z.string(), note: z.string().optional() });
    await expect((await model()).complete({ messages: [{ role: "user", content: "Judge" }], schema: optional, maxTokens: 64 })).rejects.toMatchObject({
      code: "LLM_OUTPUT_INVALID",
    });
    const format = (harness.server().requests[0]?.body as { response_format: { json_schema: { strict: boolean } } }).response_format;
    expect(format.json_schema.strict).toBe(false);

    harness.server().play([
      {
        status: 200,
        body: {
          id: "chatcmpl-list",
          object: "chat.completion",
          created: 1,
          model: "gpt-4.1",
          choices: [{ index: 0, message: { role: "assistant", content: '{"value":["a","b"]}' }, finish_reason: "stop" }],
        },
      },
    ]);
    const list = await (await model()).complete({ messages: [{ role: "user", content: "List" }], schema: z.array(z.string()), maxTokens: 64 });
    expect(list.parsed).toEqual(["a", "b"]);
    // A compatible server may leave usage out: the call still counts, with zero tokens.
    expect(list.usage).toEqual({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });
    const wrapped = harness.server().requests[0]?.body as { response_format: { json_schema: { schema: unknown; strict: boolean } } };
    expect(wrapped.response_format.json_schema).toMatchObject({
      strict: true,
      schema: { type: "object", properties: { value: { type: "array" } }, required: ["value"] },
    });
  });

  it("converts tool definitions to function tools", async () => {
    harness.server().play([await loadFixture("openai", "tool-call")]);
    const result = await (await model()).complete({ messages: [{ role: "user", content: "Look" }], tools: [conformanceTool], maxTokens: 64 });
    expect(result.toolCalls).toEqual([{ id: "call_metrics01", name: "read_metrics", input: { runId: "s1-lr-3e-6", last: 5 } }]);
    expect(result.stopReason).toBe("tool_calls");
    expect((harness.server().requests[0]?.body as { tools: unknown }).tools).toEqual([
      {
        type: "function",
        function: {
          name: "read_metrics",
          description: "Read the last metrics of a run.",
          parameters: {
            type: "object",
            properties: { runId: { type: "string" }, last: { type: "integer", minimum: expect.any(Number), maximum: expect.any(Number) } },
            required: ["runId", "last"],
            additionalProperties: false,
          },
        },
      },
    ]);
  });

  it("accepts a JSON answer inside a markdown fence, as local models often send", async () => {
    harness.server().play([
      {
        status: 200,
        body: {
          id: "chatcmpl-fence",
          object: "chat.completion",
          created: 1,
          model: "qwen2.5-7b-instruct",
          choices: [
            { index: 0, message: { role: "assistant", content: "```json\n" + JSON.stringify(conformanceAnswers.structured) + "\n```" }, finish_reason: "stop" },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        },
      },
    ]);
    const sink = new InMemoryUsageSink();
    const warnings: string[] = [];
    const local = await createChatModel(
      { provider: "openai", model: "qwen2.5-7b-instruct", apiKey: "no-key", baseUrl: harness.baseUrl(), maxRetries: 0 },
      { sink, warn: (message) => warnings.push(message) },
    );
    const result = await local.complete({ messages: [{ role: "user", content: "Plan" }], schema: conformanceSchema, maxTokens: 64 });
    expect(result.parsed).toEqual(conformanceAnswers.structured);
    // A local server's unpriced model: booked at $0 with its tokens and time, and no warning
    // mid-output (the planner line says it once).
    expect(sink.records).toMatchObject([{ model: "qwen2.5-7b-instruct", costUsd: 0, inputTokens: 10, outputTokens: 5, cachedTokens: 0, ok: true }]);
    expect(sink.records[0]?.durationMs).toBeGreaterThanOrEqual(0);
    expect(warnings).toEqual([]);
  });

  it("streams an answer (server-sent events), booking the usage of its last event; a server that refuses streaming is asked again without", async () => {
    const answer = await loadFixture("openai", "structured-valid");
    harness
      .server()
      .play([answer, { status: 400, body: { error: { message: "stream: streaming is not supported by the reference server", param: "stream" } } }, answer]);
    const sink = new InMemoryUsageSink();
    const streaming = await createChatModel(
      { provider: "openai", model: "gpt-4.1", apiKey: "no-key", baseUrl: harness.baseUrl(), maxRetries: 0, stream: true },
      { sink, warn: () => {} },
    );
    const first = await streaming.complete({ messages: [{ role: "user", content: "Plan" }], schema: conformanceSchema, maxTokens: 64 });
    expect(first.parsed).toEqual(conformanceAnswers.structured);
    expect(harness.server().requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(sink.records[0]?.inputTokens).toBeGreaterThan(0);
    const second = await streaming.complete({ messages: [{ role: "user", content: "Plan" }], schema: conformanceSchema, maxTokens: 64 });
    expect(second.parsed).toEqual(conformanceAnswers.structured);
    expect(harness.server().requests.map((request) => (request.body as { stream?: boolean }).stream ?? false)).toEqual([true, true, false]);
  });
});
