import { z } from "zod";
import type { ChatMessage } from "../../engines/port/engine.ts";
import { isFiniteNumber, isInteger, isNullish, isRecord } from "../../engines/port/json-shape.ts";
import type { ToolCallReplays } from "./tool-calls.ts";
import { textPieces, type GatewayAnswer, type TranslatedRequest } from "./wire-types.ts";

/**
 * OpenAI's chat completions (`POST /v1/chat/completions`): the gateway's first format. The
 * messages are already the internal form; an assistant message's `tool_calls` become the
 * tool-call text the policy wrote (tool-calls.ts), and tool calls in the answer come back
 * as `tool_calls` with finish_reason "tool_calls". Tool schemas are tracked as sent.
 */

const contentPartSchema = z.looseObject({ type: z.string(), text: z.string().optional() });
const toolCallSchema = z.looseObject({
  id: z.string().optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string().optional() }),
});
const messageSchema = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: z.union([z.string(), z.array(contentPartSchema), z.null()]).optional(),
  name: z.string().optional(),
  tool_call_id: z.string().optional(),
  tool_calls: z.array(toolCallSchema).nullable().optional(),
});
const positiveTokens = z.number().int().positive().nullable().optional();
export const chatRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(messageSchema).min(1, "give at least one message"),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_tokens: positiveTokens,
  max_completion_tokens: positiveTokens,
  stop: z
    .union([z.string(), z.array(z.string())])
    .nullable()
    .optional(),
  seed: z.number().int().nullable().optional(),
  tools: z.array(z.unknown()).nullable().optional(),
  n: z.number().int().positive().nullable().optional(),
});
export type ChatRequest = z.output<typeof chatRequestSchema>;

/**
 * chatRequestSchema by hand, for the hot path (see engines/port/json-shape.ts): true only for a
 * body the schema accepts as it is; anything else (an error, an unusual shape) goes to zod.
 * Keep the two in step: chat-request-check.test.ts compares them.
 */
export function isPlainChatRequest(body: unknown): body is ChatRequest {
  if (!isRecord(body)) return false;
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const message of messages) if (!isPlainMessage(message)) return false;
  return (
    (body.model === undefined || typeof body.model === "string") &&
    (isNullish(body.stream) || typeof body.stream === "boolean") &&
    (isNullish(body.stream_options) ||
      (isRecord(body.stream_options) && (body.stream_options.include_usage === undefined || typeof body.stream_options.include_usage === "boolean"))) &&
    (isNullish(body.temperature) || (isFiniteNumber(body.temperature) && body.temperature >= 0 && body.temperature <= 2)) &&
    (isNullish(body.top_p) || (isFiniteNumber(body.top_p) && body.top_p > 0 && body.top_p <= 1)) &&
    isPositiveTokens(body.max_tokens) &&
    isPositiveTokens(body.max_completion_tokens) &&
    (isNullish(body.stop) || typeof body.stop === "string" || (Array.isArray(body.stop) && body.stop.every((item) => typeof item === "string"))) &&
    (isNullish(body.seed) || isInteger(body.seed)) &&
    (isNullish(body.tools) || Array.isArray(body.tools)) &&
    isPositiveTokens(body.n)
  );
}

function isPositiveTokens(value: unknown): boolean {
  return isNullish(value) || (isInteger(value) && value > 0);
}

const roles = new Set(["system", "developer", "user", "assistant", "tool"]);

function isPlainMessage(message: unknown): boolean {
  if (!isRecord(message) || typeof message.role !== "string" || !roles.has(message.role)) return false;
  const { content, tool_calls: calls } = message;
  if (!(isNullish(content) || typeof content === "string" || (Array.isArray(content) && content.every(isPlainContentPart)))) return false;
  if (!(message.name === undefined || typeof message.name === "string")) return false;
  if (!(message.tool_call_id === undefined || typeof message.tool_call_id === "string")) return false;
  return isNullish(calls) || (Array.isArray(calls) && calls.every(isPlainToolCall));
}

function isPlainContentPart(part: unknown): boolean {
  return isRecord(part) && typeof part.type === "string" && (part.text === undefined || typeof part.text === "string");
}

function isPlainToolCall(call: unknown): boolean {
  if (!isRecord(call) || !(call.id === undefined || typeof call.id === "string")) return false;
  const fn = call.function;
  return isRecord(fn) && typeof fn.name === "string" && (fn.arguments === undefined || typeof fn.arguments === "string");
}

const honouredFields = new Set([
  "model",
  "messages",
  "stream",
  "stream_options",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "stop",
  "seed",
  "tools",
  "n",
]);

export function translateChatRequest(body: ChatRequest, replays: ToolCallReplays): TranslatedRequest {
  const ignored = Object.keys(body).filter((key) => !honouredFields.has(key) && (body as Record<string, unknown>)[key] !== null);
  if (typeof body.n === "number" && body.n > 1) ignored.push("n (one choice is returned)");
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  return {
    messages: body.messages.map((message) => toChatMessage(message, replays)),
    ...(body.tools?.length ? { tools: body.tools } : {}),
    ...(typeof body.temperature === "number" ? { temperature: body.temperature } : {}),
    ...(typeof body.top_p === "number" ? { topP: body.top_p } : {}),
    ...(typeof maxTokens === "number" ? { maxTokens } : {}),
    ...(body.stop ? { stop: typeof body.stop === "string" ? [body.stop] : body.stop } : {}),
    ...(typeof body.seed === "number" ? { seed: body.seed } : {}),
    stream: body.stream === true,
    ...(body.model === undefined ? {} : { model: body.model }),
    ignored,
  };
}

function toChatMessage(message: z.output<typeof messageSchema>, replays: ToolCallReplays): ChatMessage {
  const text = typeof message.content === "string" ? message.content : (message.content ?? []).map((part) => part.text ?? "").join("");
  const calls = message.role === "assistant" ? (message.tool_calls ?? []) : [];
  return {
    role: message.role === "developer" ? "system" : message.role,
    content:
      calls.length > 0
        ? replays.replay(
            text,
            calls.map((call) => ({ name: call.function.name, arguments: call.function.arguments ?? "{}" })),
          )
        : text,
    ...(message.name ? { name: message.name } : {}),
    ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
  };
}

function toolCallsOf(answer: GatewayAnswer): object[] {
  return answer.parsed.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }));
}

function finishReason(answer: GatewayAnswer): string {
  return answer.parsed.toolCalls.length > 0 ? "tool_calls" : answer.result.finishReason;
}

function usageOf(answer: GatewayAnswer): object {
  const { promptTokens, completionTokens } = answer.usage;
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

export function chatAnswer(answer: GatewayAnswer): object {
  const calls = toolCallsOf(answer);
  const content = calls.length > 0 && answer.parsed.text === "" ? null : answer.parsed.text;
  return {
    id: `chatcmpl-${answer.id}`,
    created: answer.created,
    model: answer.model,
    object: "chat.completion",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
        logprobs: null,
        finish_reason: finishReason(answer),
      },
    ],
    usage: usageOf(answer),
  };
}

/** The whole answer as server-sent events in OpenAI's chunk format, ending with [DONE]. */
export function chatStream(answer: GatewayAnswer, includeUsage: boolean): string {
  const head = { id: `chatcmpl-${answer.id}`, created: answer.created, model: answer.model };
  const chunk = (choices: unknown[], extra: object = {}): string =>
    `data: ${JSON.stringify({ ...head, object: "chat.completion.chunk", choices, ...extra })}\n\n`;
  const delta = (fields: object, finish: string | null = null): string => chunk([{ index: 0, delta: fields, logprobs: null, finish_reason: finish }]);
  const events = [delta({ role: "assistant", content: "" })];
  for (const piece of textPieces(answer.parsed.text)) events.push(delta({ content: piece }));
  toolCallsOf(answer).forEach((call, index) => events.push(delta({ tool_calls: [{ index, ...call }] })));
  events.push(delta({}, finishReason(answer)));
  if (includeUsage) events.push(chunk([], { usage: usageOf(answer) }));
  events.push("data: [DONE]\n\n");
  return events.join("");
}
