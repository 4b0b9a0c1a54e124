import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readEvents } from "../../../campaign/index.ts";
import { isA3rError } from "../../../core/errors.ts";
import { createScriptedChatModel, InMemoryUsageSink } from "../../../llm/index.ts";
import { llmTestTopic, planStep, screenAnswer } from "../../../test-support/llm-planner.ts";
import { HeuristicPlanner } from "../heuristic/heuristic-planner.ts";
import { FallbackPlanner, type FallbackMode } from "./fallback-planner.ts";
import { LlmPlanner } from "./llm-planner.ts";

/** Scripted models standing for a slow, a small and a nonsensical local model (no HTTP here; local-model-campaign.int.test.ts has the server). */
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "a3r-fallback-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const usage = { gpuHours: 0, wallTimeMs: 0 };

function planner(steps: Parameters<typeof createScriptedChatModel>[0], mode: FallbackMode, options: { timeoutMs?: number } = {}) {
  const sink = new InMemoryUsageSink();
  const model = createScriptedChatModel(steps, { sink }, options);
  const fallback = new FallbackPlanner({
    model: new LlmPlanner({ model }),
    heuristic: new HeuristicPlanner(),
    mode: async () => mode,
    eventsFile: join(dir, "events.jsonl"),
    campaignId: "c1",
    topicFile: join(dir, "topic.md"),
  });
  return { fallback, sink, model };
}

const late = { text: "{}", delayMs: 2000 };

describe("fallback planner", () => {
  it("retries a deadline once, then has the heuristic plan the stage, saying so in the plan and an event", async () => {
    const { fallback, sink } = planner([late, late], "heuristic", { timeoutMs: 100 });
    const step = await fallback.next({ topic: llmTestTopic(), history: [], usage });
    if (step.kind !== "stage") throw new Error(`expected a stage, got ${step.kind}`);
    expect(step.plan.rationale).toMatch(/^stage 1 planned by the heuristic: the model timed out twice \(deadline 100ms\); /);
    expect(sink.records.map((record) => [record.role, record.errorCode])).toEqual([
      ["plan", "LLM_TIMEOUT"],
      ["plan", "LLM_TIMEOUT"],
    ]);
    const { events } = await readEvents(join(dir, "events.jsonl"));
    expect(events.filter((event) => event.kind === "planner.fell_back")).toMatchObject([{ step: "plan stage 1", by: "heuristic", code: "LLM_TIMEOUT" }]);
  });

  it("frames from the topic when the model's answers fail their schema twice", async () => {
    const { fallback } = planner([{ text: "red blue up" }, { text: "green answer" }], "heuristic");
    const framing = await fallback.frame(llmTestTopic());
    expect(framing.variables.map((variable) => variable.name)).toEqual(["lr", "batch"]);
    expect(framing.metric).toEqual({ name: "reward", goal: "maximize" });
  });

  it("without a fallback, ends with the model's error, its hint naming planner_fallback and the resume", async () => {
    const { fallback } = planner([{ text: "nonsense" }, { text: "more nonsense" }], "none");
    const error = await fallback.next({ topic: llmTestTopic(), history: [], usage }).catch((caught: unknown) => caught);
    expect(isA3rError(error) && error.code).toBe("LLM_OUTPUT_INVALID");
    expect(isA3rError(error) && error.hint, isA3rError(error) ? error.hint : String(error)).toMatch(
      /planner_fallback: heuristic in .*topic\.md\); then continue from this step with: a3r resume c1$/,
    );
  });

  it("keeps a refused key as it is: the person's to fix, not the heuristic's to hide", async () => {
    const { fallback } = planner([{ error: { code: "LLM_AUTH_FAILED" } }], "heuristic");
    const error = await fallback.next({ topic: llmTestTopic(), history: [], usage }).catch((caught: unknown) => caught);
    expect(isA3rError(error) && error.code).toBe("LLM_AUTH_FAILED");
  });

  it("fits the prompt to a small window: trims optional context and sends max_tokens from the room left", async () => {
    const sink = new InMemoryUsageSink();
    const model = createScriptedChatModel([planStep(screenAnswer)], { sink });
    const windowed = Object.assign(Object.create(model) as typeof model, { contextWindow: async () => ({ tokens: 3200, source: "A3R_LLM_CONTEXT" }) });
    const step = await new LlmPlanner({ model: windowed }).next({ topic: llmTestTopic(), history: [], usage });
    expect(step.kind).toBe("stage");
    const request = model.requests[0]!;
    const promptTokens = Math.ceil(((request.system ?? "").length + request.messages[0]!.content.length) / 3);
    expect(promptTokens + request.maxTokens).toBeLessThanOrEqual(3200);
    expect(request.maxTokens).toBeGreaterThanOrEqual(300);
  });
});
