import type { ChatMessage, GenerateRequest, GenerateResult } from "../../engines/port/engine.ts";
import type { ParsedAnswer, ToolCallReplays } from "./tool-calls.ts";

/**
 * What every wire format (chat completions, Anthropic messages, OpenAI responses) becomes
 * before the gateway generates and records: the internal ChatMessage conversation, the
 * tool schemas (in chat completions' `{type: "function", function}` form, so the same
 * tools sent through any format are the same tracked prompt), and the sampling asked for.
 */
export interface TranslatedRequest extends Omit<GenerateRequest, "signal"> {
  stream: boolean;
  model?: string;
  /** Fields (or content parts) the gateway does not honour, for x-swarm-warnings. */
  ignored: string[];
}

/** Turns a validated request body into the internal form; `replays` restores tool-call turns. */
export type TranslateRequest<Body> = (body: Body, replays: ToolCallReplays) => TranslatedRequest;

/** A generated answer, ready for a wire format to write back. */
export interface GatewayAnswer {
  /** Unique per answer; formats add their own prefix (chatcmpl-, msg_, resp_). */
  id: string;
  created: number;
  model: string;
  parsed: ParsedAnswer;
  result: GenerateResult;
  usage: { promptTokens: number; completionTokens: number };
}

/** One server-sent event with an event name (Anthropic's and Responses' framing). */
export function namedEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The answer text cut into word-sized deltas, so streaming clients see several events. */
export function textPieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

/** A tool schema in chat completions' form from a name, description and JSON-schema parameters. */
export function functionTool(name: string, description: string | undefined, parameters: unknown): object {
  return { type: "function", function: { name, ...(description === undefined ? {} : { description }), parameters: parameters ?? { type: "object" } } };
}

/** Inserts the default system message when a conversation has none. */
export function withDefaultSystem(messages: ChatMessage[], system: string | undefined): ChatMessage[] {
  if (system === undefined || messages.some((message) => message.role === "system")) return messages;
  return [{ role: "system", content: system }, ...messages];
}
