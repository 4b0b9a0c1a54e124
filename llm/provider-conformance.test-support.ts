import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type A3rError, isA3rError } from "../core/errors.ts";
import type { ChatModel, ToolDefinition } from "./chat-model.ts";
import { costOf, defaultPrices, findPrice } from "./prices.ts";
import { InMemoryUsageSink, type LlmUsageRecord, type LlmUsageSink } from "./usage-sink.ts";

/**
 * What every provider must do alike, whatever its wire format. A provider's test file
 * registers these tests with a harness that makes the provider play each scenario (an
 * HTTP provider from recorded responses on a local server, the scripted one from a
 * script), then adds its own tests for what only its wire format shows.
 */
export type ConformanceScenario =
  | "plain-text"
  | "structured-valid"
  | "structured-repaired"
  | "structured-invalid-twice"
  | "tool-call"
  | "slow"
  | "error-401"
  | "error-429"
  | "error-500";

/** The answers each scenario's responses must carry, so the suite knows what to expect. */
export const conformanceAnswers = {
  plainText: "Start with a learning rate of 3e-6.",
  structured: { hypothesis: "H1", learningRate: 0.000003, stages: ["baseline", "sweep"] },
  /** learningRate is not a number and stages are missing: two issues. */
  invalidStructured: { hypothesis: "H1", learningRate: "fast" },
  toolCall: { name: "read_metrics", input: { runId: "s1-lr-3e-6", last: 5 } },
  /** Usage of every successful response (input includes the cached tokens). */
  usage: { inputTokens: 120, outputTokens: 30, cachedTokens: 100 },
  schemaName: "stage_plan",
} as const;

export const conformanceSchema = z.object({
  hypothesis: z.string(),
  learningRate: z.number().positive(),
  stages: z.array(z.string()).min(1),
});

export const conformanceTool: ToolDefinition = {
  name: "read_metrics",
  description: "Read the last metrics of a run.",
  inputSchema: z.object({ runId: z.string(), last: z.number().int() }),
};

export interface ScenarioModel {
  model: ChatModel;
  /** Each request the provider received while playing the scenario, serialized as sent. */
  shownToModel(): string[];
}

export interface ProviderHarness {
  /** Runs once before the suite (start a server). */
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
  /** A fresh model that answers the scenario's requests; SDK retries must be off (maxRetries 0). */
  play(scenario: ConformanceScenario, options: { sink: LlmUsageSink; timeoutMs?: number }): Promise<ScenarioModel>;
  /** The API key the model was given: no error or record may contain it. */
  apiKey?: string;
}

const system = "You are the chief scientist of an RL campaign.";
const question = { role: "user" as const, content: "Propose the first stage." };

async function failure(promise: Promise<unknown>): Promise<A3rError> {
  try {
    await promise;
  } catch (error) {
    if (isA3rError(error)) return error;
    throw error;
  }
  throw new Error("expected the call to fail, it succeeded");
}

function expectPriced(record: LlmUsageRecord): void {
  const price = findPrice(record.model, defaultPrices);
  const usage = { inputTokens: record.inputTokens, outputTokens: record.outputTokens, cachedTokens: record.cachedTokens };
  expect(record.costUsd).toBeCloseTo(price ? costOf(usage, price) : 0, 10);
}

export function registerProviderConformance(name: string, harness: ProviderHarness): void {
  describe(`${name} provider conformance`, () => {
    beforeAll(async () => harness.setUp?.());
    afterAll(async () => harness.tearDown?.());

    it("answers in plain text and books one call with its tokens and cost", async () => {
      const sink = new InMemoryUsageSink();
      const { model } = await harness.play("plain-text", { sink });
      const result = await model.complete({ system, messages: [question], maxTokens: 200, role: "plan" });
      expect(result.text).toBe(conformanceAnswers.plainText);
      expect(result.parsed).toBeUndefined();
      expect(result.toolCalls).toBeUndefined();
      expect(result.provider).toBe(model.provider);
      expect(result.usage).toEqual(conformanceAnswers.usage);
      expect(sink.records).toHaveLength(1);
      const [record] = sink.records;
      expect(record).toMatchObject({ kind: "llm", role: "plan", provider: model.provider, ok: true, ...conformanceAnswers.usage });
      expect(record?.errorCode).toBeUndefined();
      expect(Number.isNaN(Date.parse(record?.time ?? ""))).toBe(false);
      expectPriced(record!);
      expect(result.costUsd).toBeCloseTo(record!.costUsd, 10);
    });

    it("returns a structured answer validated by the schema", async () => {
      const sink = new InMemoryUsageSink();
      const { model } = await harness.play("structured-valid", { sink });
      const result = await model.complete({
        system,
        messages: [question],
        schema: conformanceSchema,
        schemaName: conformanceAnswers.schemaName,
        maxTokens: 400,
        role: "plan",
      });
      // Typed from the schema: this line would not compile if parsed were unknown.
      const rate: number | undefined = result.parsed?.learningRate;
      expect(rate).toBe(conformanceAnswers.structured.learningRate);
      expect(result.parsed).toEqual(conformanceAnswers.structured);
      expect(sink.records.map((record) => record.ok)).toEqual([true]);
    });

    it("repairs an invalid structured answer in one more round, showing the model its mistakes", async () => {
      const sink = new InMemoryUsageSink();
      const { model, shownToModel } = await harness.play("structured-repaired", { sink });
      const result = await model.complete({
        system,
        messages: [question],
        schema: conformanceSchema,
        schemaName: conformanceAnswers.schemaName,
        maxTokens: 400,
        role: "plan",
      });
      expect(result.parsed).toEqual(conformanceAnswers.structured);
      const shown = shownToModel();
      expect(shown).toHaveLength(2);
      expect(shown[1]).toContain("learningRate");
      expect(shown[1]).toContain("fast");
      expect(sink.records.map((record) => [record.ok, record.errorCode])).toEqual([
        [false, "LLM_OUTPUT_INVALID"],
        [true, undefined],
      ]);
      const usage = conformanceAnswers.usage;
      expect(result.usage).toEqual({ inputTokens: 2 * usage.inputTokens, outputTokens: 2 * usage.outputTokens, cachedTokens: 2 * usage.cachedTokens });
      sink.records.forEach(expectPriced);
      expect(result.costUsd).toBeCloseTo(sink.totalCostUsd(), 10);
    });

    it("fails with LLM_OUTPUT_INVALID naming the issues when the repair is invalid too", async () => {
      const sink = new InMemoryUsageSink();
      const { model } = await harness.play("structured-invalid-twice", { sink });
      const error = await failure(
        model.complete({ messages: [question], schema: conformanceSchema, schemaName: conformanceAnswers.schemaName, maxTokens: 400, role: "plan" }),
      );
      expect(error.code).toBe("LLM_OUTPUT_INVALID");
      expect(error.message).toContain("learningRate");
      expect(error.details?.issues).toEqual(expect.arrayContaining([expect.stringContaining("stages")]));
      expect(sink.records.map((record) => [record.ok, record.errorCode])).toEqual([
        [false, "LLM_OUTPUT_INVALID"],
        [false, "LLM_OUTPUT_INVALID"],
      ]);
      expect(sink.records.every((record) => record.inputTokens === conformanceAnswers.usage.inputTokens)).toBe(true);
    });

    it("returns tool calls with their parsed input", async () => {
      const sink = new InMemoryUsageSink();
      const { model } = await harness.play("tool-call", { sink });
      const result = await model.complete({ system, messages: [question], tools: [conformanceTool], maxTokens: 200, role: "diagnose" });
      expect(result.toolCalls).toHaveLength(1);
      expect(result.toolCalls?.[0]).toMatchObject(conformanceAnswers.toolCall);
      expect(typeof result.toolCalls?.[0]?.id).toBe("string");
      expect(sink.records).toMatchObject([{ ok: true, role: "diagnose" }]);
    });

    it("stops at once when the caller aborts, and books the aborted call", async () => {
      const sink = new InMemoryUsageSink();
      const { model } = await harness.play("slow", { sink });
      const controller = new AbortController();
      const started = Date.now();
      setTimeout(() => controller.abort(), 50);
      const error = await failure(model.complete({ messages: [question], maxTokens: 200, signal: controller.signal }));
      expect(error.code).toBe("LLM_ABORTED");
      expect(error.retryable).toBe(false);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(sink.records).toMatchObject([{ ok: false, errorCode: "LLM_ABORTED", role: "other", inputTokens: 0 }]);
    });

    it("fails with LLM_TIMEOUT when its deadline passes", async () => {
      const sink = new InMemoryUsageSink();
      const { model } = await harness.play("slow", { sink, timeoutMs: 100 });
      const started = Date.now();
      const error = await failure(model.complete({ messages: [question], maxTokens: 200 }));
      expect(error.code).toBe("LLM_TIMEOUT");
      expect(error.retryable).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(sink.records).toMatchObject([{ ok: false, errorCode: "LLM_TIMEOUT" }]);
    });

    const errorCases = [
      ["error-401", "LLM_AUTH_FAILED", false],
      ["error-429", "LLM_RATE_LIMITED", true],
      ["error-500", "LLM_UNAVAILABLE", true],
    ] as const;
    for (const [scenario, code, retryable] of errorCases) {
      it(`maps ${scenario} to ${code} without leaking the key`, async () => {
        const sink = new InMemoryUsageSink();
        const { model } = await harness.play(scenario, { sink });
        const error = await failure(model.complete({ messages: [question], maxTokens: 200, role: "write" }));
        expect(error.code).toBe(code);
        expect(error.retryable).toBe(retryable);
        expect(error.hint).toBeTruthy();
        if (harness.apiKey) {
          expect(JSON.stringify(error.toJSON())).not.toContain(harness.apiKey);
          expect(error.message).not.toContain(harness.apiKey);
        }
        expect(sink.records).toMatchObject([{ ok: false, errorCode: code, role: "write", costUsd: 0 }]);
      });
    }
  });
}
