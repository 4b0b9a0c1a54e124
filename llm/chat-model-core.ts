import { performance } from "node:perf_hooks";
import type { z } from "zod";
import { A3rError, isA3rError } from "../core/errors.ts";
import type { BackendResponse, ChatBackend } from "./backend.ts";
import { checkAnswer, repairPrompt } from "./answer-check.ts";
import { createCallSignal, type CallSignal } from "./call-signal.ts";
import type { ContextWindow } from "./context-window.ts";
import { publishLlmProgress } from "./progress.ts";
import type { ChatMessage, ChatModel, ChatRequest, ChatResult, TokenUsage } from "./chat-model.ts";
import { outputSpecification, type OutputSpecification } from "./model-schema.ts";
import type { PriceBook } from "./prices.ts";
import { checkRequest } from "./request-check.ts";
import type { LlmUsageSink } from "./usage-sink.ts";

export interface ChatModelCoreOptions {
  sink: LlmUsageSink;
  priceBook: PriceBook;
  /** Deadline for one `complete` call, repair round included. */
  timeoutMs?: number;
  /** Clock for ledger times (tests pin it). */
  now?: () => Date;
  /** The model's window, when known (llm/context-window.ts); callers fit their prompts to it. */
  contextWindow?: () => Promise<ContextWindow | undefined>;
  /**
   * What a person sets to change the deadline and the window, named in errors
   * (default: the config fields; from the environment: A3R_LLM_TIMEOUT, A3R_LLM_CONTEXT).
   */
  knobs?: { timeout: string; context: string };
  /** The most output tokens one answer may take, over what a request asks (A3R_LLM_MAX_TOKENS). */
  maxOutputTokens?: number;
  /** How often a call in flight publishes its progress (llm/progress.ts); default 5 s. */
  progressIntervalMs?: number;
}

interface Totals {
  usage: TokenUsage;
  costUsd: number;
}

/**
 * Turns a provider's single round trip into the ChatModel port: request checks, one
 * deadline per call, structured output with one repair round, cost and the ledger. Kept
 * apart from the providers so that all of them behave alike where the port promises it.
 */
export function createChatModelFromBackend(backend: ChatBackend, options: ChatModelCoreOptions): ChatModel {
  const now = options.now ?? (() => new Date());

  async function roundTrip(
    messages: ChatMessage[],
    request: ChatRequest<z.ZodType>,
    output: OutputSpecification | undefined,
    callSignal: CallSignal,
    role: string,
  ): Promise<{ response: BackendResponse; book: (ok: boolean, errorCode?: string) => Promise<number> }> {
    const started = performance.now();
    const book = async (response: BackendResponse | undefined, ok: boolean, errorCode?: string): Promise<number> => {
      const usage = response?.usage ?? { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
      const model = response?.model ?? backend.model;
      const costUsd = options.priceBook.costOf(model, usage);
      await options.sink.record({
        time: now().toISOString(),
        kind: "llm",
        role,
        provider: backend.provider,
        model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cachedTokens: usage.cachedTokens,
        costUsd,
        durationMs: Math.round(performance.now() - started),
        ok,
        ...(errorCode === undefined ? {} : { errorCode }),
      });
      return costUsd;
    };
    let response: BackendResponse;
    let streamed: number | undefined;
    const progress = (done: boolean) =>
      publishLlmProgress({ role, provider: backend.provider, model: backend.model, outputTokens: streamed, elapsedMs: performance.now() - started, done });
    const ticker = setInterval(() => progress(false), options.progressIntervalMs ?? 5000);
    ticker.unref?.();
    try {
      response = await backend.send({
        ...(request.system === undefined ? {} : { system: request.system }),
        messages,
        ...(request.tools === undefined ? {} : { tools: request.tools }),
        ...(output === undefined ? {} : { output }),
        maxTokens: Math.min(request.maxTokens, options.maxOutputTokens ?? request.maxTokens),
        ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
        role,
        callSignal,
        onOutput: (tokens) => {
          streamed = tokens;
        },
      });
    } catch (error) {
      await book(undefined, false, isA3rError(error) ? error.code : "INTERNAL");
      throw explained(backend, options, error, role);
    } finally {
      clearInterval(ticker);
      progress(true);
    }
    return { response, book: (ok, errorCode) => book(response, ok, errorCode) };
  }

  async function complete(request: ChatRequest<z.ZodType>): Promise<ChatResult<unknown>> {
    checkRequest(request);
    const role = request.role ?? "other";
    const schema = request.schema;
    const output = schema ? outputSpecification(schema, request.schemaName) : undefined;
    const callSignal = createCallSignal(request.signal, options.timeoutMs);
    const totals: Totals = { usage: { inputTokens: 0, outputTokens: 0, cachedTokens: 0 }, costUsd: 0 };
    try {
      let messages = request.messages;
      for (let round = 1; ; round++) {
        const { response, book } = await roundTrip(messages, request, output, callSignal, role);
        addUsage(totals, response.usage);
        // A tool call is an answer in its own right: nothing to validate.
        if (!output || !schema || response.toolCalls.length > 0) {
          totals.costUsd += await book(true);
          return toResult(backend, response, totals, undefined);
        }
        const check = checkAnswer(response, output, schema);
        totals.costUsd += await book(check.ok, check.ok ? undefined : "LLM_OUTPUT_INVALID");
        if (check.ok) return toResult(backend, response, totals, check.value);
        if (round >= 2) throw invalidOutput(backend, output, role, check.issues);
        messages = [
          ...request.messages,
          { role: "assistant", content: check.answerText.trim() === "" ? "(empty answer)" : check.answerText },
          { role: "user", content: repairPrompt(output, check.issues) },
        ];
      }
    } finally {
      callSignal.dispose();
    }
  }

  return {
    provider: backend.provider,
    model: backend.model,
    priceBook: options.priceBook,
    ...(options.contextWindow === undefined ? {} : { contextWindow: options.contextWindow }),
    complete: complete as ChatModel["complete"],
  };
}

/** A deadline or a window that was too small, told in the knob a person turns. */
function explained(backend: ChatBackend, options: ChatModelCoreOptions, error: unknown, role: string): unknown {
  if (!isA3rError(error)) return error;
  const knobs = options.knobs ?? { timeout: "timeoutMs", context: "contextTokens" };
  const details = { ...error.details, role };
  if (error.code === "LLM_TIMEOUT" && options.timeoutMs !== undefined) {
    return new A3rError(
      "LLM_TIMEOUT",
      `${backend.provider} ${backend.model}: the ${role} call did not finish within ${knobs.timeout} (${formatMs(options.timeoutMs)})`,
      {
        hint: `Raise ${knobs.timeout} (now ${formatMs(options.timeoutMs)}; a slow local model may need e.g. 15m), or give the heuristic planner the steps the model cannot make (--planner auto, or planner_fallback: heuristic in the topic).`,
        details: { ...details, timeoutMs: options.timeoutMs },
      },
    );
  }
  if (error.code === "LLM_BAD_REQUEST" && contextOverflow.test(error.message)) {
    return new A3rError("LLM_BAD_REQUEST", `${error.message} (the ${role} prompt does not fit the model's context window)`, {
      hint: `Serve the model with a longer context (vLLM: --max-model-len), or, when the server does not state its window in /v1/models, set ${knobs.context} to it so that a3r trims its prompts to fit; or give the heuristic planner the steps the model cannot make (--planner auto, or planner_fallback: heuristic in the topic).`,
      details: { ...details, contextOverflow: true },
    });
  }
  return error;
}

/** How servers word a prompt that is too long: vLLM, a3r's reference server, OpenAI, llama.cpp, Ollama. */
const contextOverflow =
  /max[-_ ]model[-_ ]len|context length|context window|maximum context|too many tokens|exceeds the (available )?context|prompt is too long/i;

function formatMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

function addUsage(totals: Totals, usage: TokenUsage): void {
  totals.usage.inputTokens += usage.inputTokens;
  totals.usage.outputTokens += usage.outputTokens;
  totals.usage.cachedTokens += usage.cachedTokens;
}

function toResult(backend: ChatBackend, response: BackendResponse, totals: Totals, parsed: unknown): ChatResult<unknown> {
  const text = response.text !== "" || response.structured === undefined ? response.text : JSON.stringify(response.structured);
  return {
    text,
    ...(parsed === undefined ? {} : { parsed }),
    ...(response.toolCalls.length > 0 ? { toolCalls: response.toolCalls } : {}),
    usage: { ...totals.usage },
    costUsd: Math.round(totals.costUsd * 1e8) / 1e8,
    model: response.model,
    provider: backend.provider,
    ...(response.stopReason === undefined ? {} : { stopReason: response.stopReason }),
  };
}

function invalidOutput(backend: ChatBackend, output: OutputSpecification, role: string, issues: string[]): A3rError {
  const shown = issues.slice(0, 5).join("; ");
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : "";
  return new A3rError(
    "LLM_OUTPUT_INVALID",
    `${backend.provider} ${backend.model} gave no valid "${output.name}" answer, even after one repair round: ${shown}${more}`,
    {
      hint: "Try a stronger model, or simplify the schema the answer must match.",
      details: { provider: backend.provider, model: backend.model, role, schemaName: output.name, issues },
    },
  );
}
