import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { isA3rError, type A3rError } from "../core/errors.ts";
import { createChatModel, createScriptedChatModel, type ScriptedChatModel } from "./factory.ts";
import { loadScript, parseScript, textMatches } from "./scripted-script.ts";
import { InMemoryUsageSink } from "./usage-sink.ts";

const fixture = (name: string) => fileURLToPath(new URL(`./__fixtures__/scripts/${name}`, import.meta.url));
const planSchema = z.object({ hypothesis: z.string(), learningRate: z.number(), stages: z.array(z.string()) });

async function scripted(script: unknown, sink = new InMemoryUsageSink()): Promise<ScriptedChatModel> {
  return (await createChatModel({ provider: "scripted", script: script as string }, { sink })) as ScriptedChatModel;
}

async function failure(promise: Promise<unknown>): Promise<A3rError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isA3rError(error)) throw new Error(`expected an A3rError, got ${String(error)}`);
  return error;
}

describe("scripted model", () => {
  it("matches text as a substring or as /regex/flags", () => {
    expect(textMatches("stage 2", "Plan stage 2 now")).toBe(true);
    expect(textMatches("/STAGE \\d/i", "plan stage 2")).toBe(true);
    expect(textMatches("/^stage/", "plan stage 2")).toBe(false);
    expect(textMatches("a/b", "a/b/c")).toBe(true);
  });

  it("plays a YAML script by matching, with repeatable steps", async () => {
    const model = await scripted(fixture("plan-and-analyze.yaml"));
    expect(model.model).toBe("scripted-demo");
    const analysis = await model.complete({ messages: [{ role: "user", content: "Did it hold?" }], maxTokens: 10, role: "analyze" });
    expect(analysis.text).toBe("The prediction held.");
    const plan = await model.complete({
      messages: [{ role: "user", content: "Plan Stage 1." }],
      schema: planSchema,
      maxTokens: 10,
      role: "plan",
    });
    expect(plan.parsed?.stages).toEqual(["baseline", "sweep"]);
    const again = await model.complete({ messages: [{ role: "user", content: "And now?" }], maxTokens: 10, role: "analyze" });
    expect(again.text).toBe("The prediction held.");
    const tool = await model.complete({ system: "You run swarm jobs.", messages: [{ role: "user", content: "x" }], maxTokens: 10 });
    expect(tool.toolCalls).toEqual([{ id: "call_1", name: "read_metrics", input: { runId: "s1", last: 3 } }]);
    expect(tool.usage).toEqual({ inputTokens: 50, outputTokens: 10, cachedTokens: 0 });
    expect(model.remainingSteps()).toBe(1);
  });

  it("records every request it was shown, the repair round included", async () => {
    const model = await scripted([{ parsed: { hypothesis: "H1" } }, { parsed: { hypothesis: "H1", learningRate: 1e-6, stages: ["a"] } }]);
    await model.complete({ system: "sys", messages: [{ role: "user", content: "plan" }], schema: planSchema, schemaName: "plan", maxTokens: 99, role: "plan" });
    expect(model.requests).toHaveLength(2);
    expect(model.requests[0]).toEqual({
      role: "plan",
      system: "sys",
      messages: [{ role: "user", content: "plan" }],
      toolNames: [],
      schemaName: "plan",
      maxTokens: 99,
    });
    expect(model.requests[1]?.messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(model.requests[1]?.messages[1]?.content).toBe('{"hypothesis":"H1"}');
    expect(model.requests[1]?.messages[2]?.content).toContain("learningRate");
  });

  it("estimates usage from the text lengths when a step gives none", async () => {
    const sink = new InMemoryUsageSink();
    const model = createScriptedChatModel([{ text: "12345678" }], { sink });
    const result = await model.complete({ system: "abcd", messages: [{ role: "user", content: "efghijkl" }], maxTokens: 5 });
    expect(result.usage).toEqual({ inputTokens: 3, outputTokens: 2, cachedTokens: 0 });
    expect(sink.records[0]).toMatchObject({ provider: "scripted", model: "scripted", costUsd: 0, inputTokens: 3 });
  });

  it("fails loudly when the script runs out, naming the role and the last message", async () => {
    const model = await scripted([{ text: "only one" }]);
    await model.complete({ messages: [{ role: "user", content: "first" }], maxTokens: 5 });
    const error = await failure(model.complete({ messages: [{ role: "user", content: "second question about stage 3" }], maxTokens: 5, role: "diagnose" }));
    expect(error.code).toBe("LLM_SCRIPT_EXHAUSTED");
    expect(error.message).toContain('"diagnose"');
    expect(error.message).toContain("second question about stage 3");
    expect(error.hint).toBeTruthy();
  });

  it("in order, refuses a step whose match does not hold", async () => {
    const model = await scripted({ steps: [{ match: { role: "plan" }, text: "plan" }] });
    const error = await failure(model.complete({ messages: [{ role: "user", content: "hi" }], maxTokens: 5, role: "write" }));
    expect(error.code).toBe("LLM_SCRIPT_MISMATCH");
    expect(error.message).toContain("step 1");
  });

  it("rejects a broken script file naming the line and the field", async () => {
    const error = await failure(loadScript(fixture("broken-step.yaml")));
    expect(error.code).toBe("LLM_CONFIG_INVALID");
    expect(error.message).toContain("broken-step.yaml:4");
    expect(error.message).toContain("steps.1.usage.inputTokens");
    expect(() => parseScript([{ match: { role: "plan" } }])).toThrow(/needs text, parsed, toolCalls or error/);
    expect(() => parseScript({ mode: "random", steps: [] })).toThrow(/mode/);
  });

  it("rejects a missing script file with a hint", async () => {
    const error = await failure(scripted("/nonexistent/script.yaml"));
    expect(error.code).toBe("LLM_CONFIG_INVALID");
    expect(error.hint).toContain("A3R_LLM_SCRIPT");
  });
});
