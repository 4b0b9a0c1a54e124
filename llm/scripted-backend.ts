import { A3rError } from "../core/errors.ts";
import type { BackendRequest, BackendResponse, ChatBackend } from "./backend.ts";
import type { CallSignal } from "./call-signal.ts";
import type { ChatMessage, TokenUsage } from "./chat-model.ts";
import { ScriptPlayer } from "./script-player.ts";
import type { Script, ScriptStep } from "./scripted-script.ts";

/** A request as the scripted model saw it, for tests to inspect what a model was shown. */
export interface ScriptedRequest {
  role: string;
  system?: string;
  messages: ChatMessage[];
  toolNames: string[];
  /** Name of the structured answer asked for, when one was. */
  schemaName?: string;
  maxTokens: number;
  temperature?: number;
}

export interface ScriptedBackend extends ChatBackend {
  /** Every request received, repair rounds included, in arrival order. */
  readonly requests: readonly ScriptedRequest[];
  remainingSteps(): number;
}

/**
 * Deterministic answers from a script: no network, no randomness, so tests and offline
 * campaigns replay exactly. Token usage, when a step does not give it, is estimated as
 * one token per four characters so that budgets still move.
 */
export function createScriptedBackend(script: Script, options: { source?: string; model?: string } = {}): ScriptedBackend {
  const source = options.source ?? "script";
  const player = new ScriptPlayer(script, source);
  const requests: ScriptedRequest[] = [];
  const model = options.model ?? script.model ?? "scripted";

  return {
    provider: "scripted",
    model,
    requests,
    remainingSteps: () => player.remainingSteps(),
    async send(request: BackendRequest): Promise<BackendResponse> {
      requests.push(snapshot(request));
      failIfAborted(request.callSignal);
      const lastUserMessage = [...request.messages].reverse().find((message) => message.role === "user")?.content ?? "";
      const step = player.next({ role: request.role, ...(request.system === undefined ? {} : { system: request.system }), lastUserMessage });
      if (step.delayMs) await wait(step.delayMs, request.callSignal);
      if (step.error) {
        throw new A3rError(step.error.code, `scripted: ${step.error.message ?? "failure requested by the script"}`, {
          hint: "The model script asked for this failure; remove its error step to get an answer.",
          details: { provider: "scripted" },
        });
      }
      return answer(step, request, model);
    },
  };
}

function answer(step: ScriptStep, request: BackendRequest, model: string): BackendResponse {
  const structured = request.output && step.parsed !== undefined ? step.parsed : undefined;
  const text = step.text ?? (step.parsed !== undefined && structured === undefined ? JSON.stringify(step.parsed) : "");
  const toolCalls = (step.toolCalls ?? []).map((call, index) => ({ id: call.id ?? `call_${index + 1}`, name: call.name, input: call.input }));
  return {
    text,
    ...(structured === undefined ? {} : { structured }),
    toolCalls,
    usage: step.usage ?? estimateUsage(request, text, structured, toolCalls),
    model,
    stopReason: step.stopReason ?? (toolCalls.length > 0 ? "tool_use" : "end_turn"),
  };
}

function estimateUsage(request: BackendRequest, text: string, structured: unknown, toolCalls: unknown[]): TokenUsage {
  const shown = (request.system ?? "").length + request.messages.reduce((sum, message) => sum + message.content.length, 0);
  const given = text.length + (structured === undefined ? 0 : JSON.stringify(structured).length) + (toolCalls.length ? JSON.stringify(toolCalls).length : 0);
  return { inputTokens: Math.ceil(shown / 4), outputTokens: Math.ceil(given / 4), cachedTokens: 0 };
}

function snapshot(request: BackendRequest): ScriptedRequest {
  return {
    role: request.role,
    ...(request.system === undefined ? {} : { system: request.system }),
    messages: request.messages.map((message) => ({ ...message })),
    toolNames: (request.tools ?? []).map((tool) => tool.name),
    ...(request.output === undefined ? {} : { schemaName: request.output.name }),
    maxTokens: request.maxTokens,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  };
}

function abortError(callSignal: CallSignal): A3rError {
  return callSignal.cause() === "deadline"
    ? new A3rError("LLM_TIMEOUT", "scripted: the call did not finish before its deadline", { details: { provider: "scripted" } })
    : new A3rError("LLM_ABORTED", "scripted: the call was aborted by the caller", { details: { provider: "scripted" } });
}

function failIfAborted(callSignal: CallSignal): void {
  if (callSignal.signal.aborted) throw abortError(callSignal);
}

function wait(milliseconds: number, callSignal: CallSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError(callSignal));
    };
    const timer = setTimeout(() => {
      callSignal.signal.removeEventListener("abort", onAbort);
      resolve();
    }, milliseconds);
    callSignal.signal.addEventListener("abort", onAbort, { once: true });
  });
}
