import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isA3rError, type A3rError } from "../core/errors.ts";
import { chatModelFromEnv, createChatModel, describeModelChoice } from "./factory.ts";
import { InMemoryUsageSink } from "./usage-sink.ts";

const script = fileURLToPath(new URL("./__fixtures__/scripts/plan-and-analyze.yaml", import.meta.url));
const deps = () => ({ sink: new InMemoryUsageSink(), warn: () => {} });

async function failure(promise: Promise<unknown>): Promise<A3rError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isA3rError(error)) throw new Error(`expected an A3rError, got ${String(error)}`);
  return error;
}

describe("describeModelChoice", () => {
  it("says which model the environment selects and why", () => {
    expect(describeModelChoice({})).toBeUndefined();
    expect(describeModelChoice({ A3R_LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "k" })).toBe("anthropic claude-sonnet-4-6 (from A3R_LLM_PROVIDER)");
    expect(describeModelChoice({ OPENAI_API_KEY: "k", A3R_LLM_MODEL: "gpt-4o" })).toBe("openai gpt-4o (from OPENAI_API_KEY)");
    expect(describeModelChoice({ A3R_LLM_PROVIDER: "openai", A3R_LLM_BASE_URL: "http://localhost:8000/v1", A3R_LLM_MODEL: "qwen" })).toBe(
      "openai qwen at http://localhost:8000/v1 (from A3R_LLM_PROVIDER)",
    );
    expect(describeModelChoice({ A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: "/s.yaml" })).toBe("scripted /s.yaml (from A3R_LLM_PROVIDER)");
    // Not undefined: a typo must fail loudly rather than fall back to the heuristic planner.
    expect(describeModelChoice({ A3R_LLM_PROVIDER: "antropic" })).toContain("unknown provider");
  });
});

describe("chatModelFromEnv", () => {
  it("names the variable to set when nothing or too little is configured", async () => {
    expect((await failure(chatModelFromEnv({}, deps()))).where).toBe("A3R_LLM_PROVIDER");
    const missingKey = await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "anthropic" }, deps()));
    expect(missingKey.code).toBe("LLM_CONFIG_INVALID");
    expect(missingKey.message).toContain("ANTHROPIC_API_KEY");
    expect(missingKey.hint).toContain("ANTHROPIC_API_KEY");
    expect((await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "openai" }, deps()))).where).toBe("OPENAI_API_KEY");
    expect((await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "scripted" }, deps()))).where).toBe("A3R_LLM_SCRIPT");
    expect((await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "gemini" }, deps()))).where).toBe("A3R_LLM_PROVIDER");
    expect((await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "openai", A3R_LLM_BASE_URL: "http://localhost:8000/v1" }, deps()))).where).toBe("A3R_LLM_MODEL");
  });

  it("names the variable holding a bad value", async () => {
    const badUrl = await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "k", A3R_LLM_BASE_URL: "not a url" }, deps()));
    expect(badUrl.where).toBe("A3R_LLM_BASE_URL");
    const badTimeout = await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script, A3R_LLM_TIMEOUT: "soon" }, deps()));
    expect(badTimeout.where).toBe("A3R_LLM_TIMEOUT");
    const badRetries = await failure(chatModelFromEnv({ A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script, A3R_LLM_MAX_RETRIES: "-1" }, deps()));
    expect(badRetries.where).toBe("A3R_LLM_MAX_RETRIES");
  });

  it("builds each provider from the environment", async () => {
    const anthropic = await chatModelFromEnv({ ANTHROPIC_API_KEY: "sk-ant-x", A3R_LLM_MODEL: "claude-opus-4-6" }, deps());
    expect([anthropic.provider, anthropic.model]).toEqual(["anthropic", "claude-opus-4-6"]);
    const local = await chatModelFromEnv({ A3R_LLM_PROVIDER: "openai", A3R_LLM_BASE_URL: "http://127.0.0.1:8000/v1", A3R_LLM_MODEL: "qwen" }, deps());
    expect([local.provider, local.model]).toEqual(["openai", "qwen"]);
    const scripted = await chatModelFromEnv({ A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script, A3R_LLM_TIMEOUT: "2m" }, deps());
    const answer = await scripted.complete({ messages: [{ role: "user", content: "?" }], maxTokens: 5, role: "analyze" });
    expect(answer.text).toBe("The prediction held.");
  });
});

describe("createChatModel", () => {
  it("validates the config object and names the field", async () => {
    const error = await failure(createChatModel({ provider: "anthropic", apiKey: "" }, deps()));
    expect(error.code).toBe("LLM_CONFIG_INVALID");
    expect(error.message).toContain("apiKey");
    const unknownField = await failure(createChatModel({ provider: "openai", apiKey: "k", temprature: 1 } as never, deps()));
    expect(unknownField.message).toContain("temprature");
  });

  it("rejects an impossible request before anything is sent", async () => {
    const model = await createChatModel({ provider: "scripted", script: [{ text: "x" }] }, deps());
    const empty = await failure(model.complete({ messages: [], maxTokens: 5 }));
    expect(empty.code).toBe("LLM_BAD_REQUEST");
    expect(empty.where).toBe("request.messages");
    const clash = await failure(
      model.complete({
        messages: [{ role: "user", content: "x" }],
        tools: [{ name: "answer", description: "d", inputSchema: (await import("zod")).z.object({}) }],
        schema: (await import("zod")).z.object({}),
        maxTokens: 5,
      }),
    );
    expect(clash.where).toBe("request.schemaName");
  });
});
