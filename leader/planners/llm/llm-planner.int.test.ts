import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChatModel, InMemoryUsageSink } from "../../../llm/index.ts";
import { FakeProviderServer, type FakeResponse } from "../../../test-support/llm-servers/fake-provider-server.ts";
import { LlmPlanner } from "./llm-planner.ts";
import { llmTestTopic, screenAnswer } from "../../../test-support/llm-planner.ts";
import { loadSkill } from "./skills.ts";

/**
 * The llm planner through the real `@anthropic-ai/sdk` and `openai` clients, against the
 * local wire-format server of llm/testing: `frame` and one `next` (a stage plan). It
 * checks both directions: what goes on the wire (skill as system prompt, the structured
 * output the schema asks for, OpenAI's strict mode) and that the providers' answers come
 * back as a framing and a valid stage plan.
 */
const apiKey = "sk-planner-int-secret-0123456789";

const framing = {
  question: "Which lr in {0.2, 0.05, 0.5} gives the highest final reward?",
  variables: [{ name: "lr", values: [0.2, 0.05, 0.5], why: "step size" }],
  controls: ["batch 8"],
  metric: { name: "reward", goal: "maximize" },
  answeredWhen: "one lr is better beyond seed noise",
};

const usage = { prompt_tokens: 900, completion_tokens: 120, total_tokens: 1020 };

function openAiAnswer(answer: unknown): FakeResponse {
  return {
    body: {
      id: "chatcmpl-planner",
      object: "chat.completion",
      created: 1764410000,
      model: "gpt-4.1-2025-04-14",
      choices: [{ index: 0, message: { role: "assistant", content: JSON.stringify(answer), refusal: null }, logprobs: null, finish_reason: "stop" }],
      usage,
    },
  };
}

function anthropicAnswer(name: string, answer: unknown): FakeResponse {
  return {
    body: {
      id: "msg_planner",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-6",
      content: [{ type: "tool_use", id: `toolu_${name}`, name, input: answer }],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 900, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 120 },
    },
  };
}

const cases = [
  {
    provider: "openai" as const,
    model: "gpt-4.1",
    path: "/v1/chat/completions",
    baseUrl: (server: FakeProviderServer) => `${server.url}/v1`,
    responses: [openAiAnswer(framing), openAiAnswer(screenAnswer)],
    systemOf: (body: Record<string, unknown>) => (body.messages as { role: string; content: string }[])[0]!.content,
    schemaNameOf: (body: Record<string, unknown>) => (body.response_format as { json_schema: { name: string } }).json_schema.name,
  },
  {
    provider: "anthropic" as const,
    model: "claude-sonnet-4-6",
    path: "/v1/messages",
    baseUrl: (server: FakeProviderServer) => server.url,
    responses: [anthropicAnswer("framed_question", framing), anthropicAnswer("stage_decision", screenAnswer)],
    systemOf: (body: Record<string, unknown>) => (body.system as { text: string }[])[0]!.text,
    schemaNameOf: (body: Record<string, unknown>) => (body.tool_choice as { name: string }).name,
  },
];

describe.each(cases)("llm planner over the $provider SDK", (scenario) => {
  let server: FakeProviderServer;
  beforeAll(async () => {
    server = await FakeProviderServer.start();
  });
  afterAll(() => server.close());

  it("frames the topic and plans stage 1 from the provider's answers, with the skills as system prompts", async () => {
    server.play(scenario.responses);
    const sink = new InMemoryUsageSink();
    const model = await createChatModel(
      { provider: scenario.provider, model: scenario.model, apiKey, baseUrl: scenario.baseUrl(server), maxRetries: 0 },
      { sink, warn: () => {} },
    );
    const planner = new LlmPlanner({ model });
    const topic = llmTestTopic();

    const framed = await planner.frame(topic);
    expect(framed).toMatchObject({ question: framing.question, metric: { name: "reward", goal: "maximize" } });
    const step = await planner.next({ topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 }, framing: framed });
    expect(step.kind).toBe("stage");
    if (step.kind !== "stage") throw new Error("unreachable");
    expect(step.plan.experiments.map((item) => item.blueprintId)).toEqual(["s1-baseline-seed1", "s1-baseline-seed2", "s1-lr-0.05-seed1", "s1-lr-0.05-seed2"]);

    expect(server.requests.map((request) => request.path)).toEqual([scenario.path, scenario.path]);
    const [frameBody, planBody] = server.requests.map((request) => request.body as Record<string, unknown>);
    expect(scenario.systemOf(frameBody!)).toContain((await loadSkill("leader-frame-topic")).body);
    expect(scenario.systemOf(planBody!)).toContain((await loadSkill("leader-plan-stage")).body);
    expect([scenario.schemaNameOf(frameBody!), scenario.schemaNameOf(planBody!)]).toEqual(["framed_question", "stage_decision"]);
    if (scenario.provider === "openai") {
      // Every answer schema meets strict mode (all fields required, no free keys).
      expect((frameBody!.response_format as { json_schema: { strict: boolean } }).json_schema.strict).toBe(true);
      expect((planBody!.response_format as { json_schema: { strict: boolean } }).json_schema.strict).toBe(true);
    }
    // The key travels in a header only, never in what the model reads.
    expect(JSON.stringify(server.requests.map((request) => request.body))).not.toContain(apiKey.slice(3));
    expect(sink.records.map((record) => [record.role, record.inputTokens, record.ok])).toEqual([
      ["frame", 900, true],
      ["plan", 900, true],
    ]);
  });
});
