import { conformanceAnswers, registerProviderConformance, type ConformanceScenario } from "./provider-conformance.test-support.ts";
import { createChatModel, type ScriptedChatModel } from "./factory.ts";
import type { ScriptDefinition } from "./scripted-script.ts";

const usage = conformanceAnswers.usage;
const answers: Record<ConformanceScenario, ScriptDefinition> = {
  "plain-text": [{ text: conformanceAnswers.plainText, usage }],
  "structured-valid": [{ parsed: conformanceAnswers.structured, usage }],
  "structured-repaired": [
    { parsed: conformanceAnswers.invalidStructured, usage },
    { parsed: conformanceAnswers.structured, usage },
  ],
  "structured-invalid-twice": [
    { parsed: conformanceAnswers.invalidStructured, usage },
    { parsed: conformanceAnswers.invalidStructured, usage },
  ],
  "tool-call": [{ toolCalls: [conformanceAnswers.toolCall], usage }],
  slow: [{ text: "too late", delayMs: 5_000 }],
  "error-401": [{ error: { code: "LLM_AUTH_FAILED" } }],
  "error-429": [{ error: { code: "LLM_RATE_LIMITED" } }],
  "error-500": [{ error: { code: "LLM_UNAVAILABLE" } }],
};

registerProviderConformance("scripted", {
  async play(scenario, { sink, timeoutMs }) {
    // A priced model name, so that the suite's cost checks are not trivially zero.
    const model = (await createChatModel(
      { provider: "scripted", model: "claude-haiku-4-5", script: answers[scenario], ...(timeoutMs ? { timeoutMs } : {}) },
      { sink },
    )) as ScriptedChatModel;
    return { model, shownToModel: () => model.requests.map((request) => JSON.stringify(request)) };
  },
});
