import { canonicalJson } from "../../tracking/call-keys.ts";

/**
 * Tool calls in the policy's own text. Chat templates of the Qwen/Hermes family have the
 * model write each call as
 *
 *   <tool_call>
 *   {"name": "get_weather", "arguments": {"city": "Paris"}}
 *   </tool_call>
 *
 * and render a replayed assistant turn the same way. The gateway parses that text into the
 * wire format's structured calls (chat `tool_calls`, Anthropic `tool_use` blocks, Responses
 * `function_call` items) and, when a client replays such a turn, turns the structured calls
 * back into the text the policy really wrote, so the recorded conversation (and its token
 * ids) still replays the earlier call and the timelines merge (swarm/tracking/MERGE.md).
 *
 * The embedded engine never writes this format: its answers stay plain text.
 */

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as JSON text (an object), as OpenAI's wire formats carry them. */
  arguments: string;
}

/** An answer split into its text and its tool calls (none when the model wrote plain text). */
export interface ParsedAnswer {
  text: string;
  toolCalls: ToolCall[];
}

const openTag = "<tool_call>";
const closeTag = "</tool_call>";

/**
 * Splits `completion` into text and tool calls. A block whose body is not a JSON object
 * with a string `name` (and an object or JSON-text `arguments`/`parameters`), or one left
 * unclosed (the answer ran out of tokens), stays in the text: a malformed call is the
 * model's text, not an error. One pass over the text (indexOf only), so linear-time.
 */
export function parseToolCalls(completion: string, newId: () => string): ParsedAnswer {
  const toolCalls: ToolCall[] = [];
  const textParts: string[] = [];
  let position = 0;
  while (position < completion.length) {
    const open = completion.indexOf(openTag, position);
    if (open < 0) break;
    const close = completion.indexOf(closeTag, open + openTag.length);
    if (close < 0) break;
    const call = toolCallOf(completion.slice(open + openTag.length, close));
    if (call) {
      textParts.push(completion.slice(position, open));
      toolCalls.push({ id: newId(), ...call });
    } else {
      textParts.push(completion.slice(position, close + closeTag.length));
    }
    position = close + closeTag.length;
  }
  if (toolCalls.length === 0) return { text: completion, toolCalls };
  textParts.push(completion.slice(position));
  return { text: textParts.join("").trim(), toolCalls };
}

function toolCallOf(body: string): { name: string; arguments: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const { name, arguments: given, parameters } = value as Record<string, unknown>;
  if (typeof name !== "string" || name === "") return undefined;
  const argumentsValue = given ?? parameters ?? {};
  const argumentsObject = typeof argumentsValue === "string" ? parseObject(argumentsValue) : argumentsValue;
  if (argumentsObject === undefined || argumentsObject === null || typeof argumentsObject !== "object" || Array.isArray(argumentsObject)) return undefined;
  return { name, arguments: JSON.stringify(argumentsObject) };
}

function parseObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A call as the client replays it: the name and the arguments as JSON text or a value. */
export interface ReplayedToolCall {
  name: string;
  arguments: unknown;
}

/** The template's rendering of an assistant turn with tool calls (for turns the policy did not write). */
export function renderToolCalls(text: string, calls: readonly ReplayedToolCall[]): string {
  const blocks = calls.map((call) => `${openTag}\n${JSON.stringify({ name: call.name, arguments: argumentsValue(call.arguments) })}\n${closeTag}`);
  return [text, ...blocks].filter((part) => part !== "").join("\n");
}

function argumentsValue(given: unknown): unknown {
  if (typeof given !== "string") return given ?? {};
  const parsed = parseObject(given);
  return parsed === undefined ? given : parsed;
}

/** One key for "this text with these calls", insensitive to JSON spacing and key order. */
function answerKey(text: string, calls: readonly ReplayedToolCall[]): string {
  return canonicalJson({ text: text.trim(), calls: calls.map((call) => ({ name: call.name, arguments: argumentsValue(call.arguments) })) });
}

/**
 * The answers with tool calls one episode received, so a replayed turn becomes the exact
 * text the policy wrote (its JSON spacing, key order, newlines). Bounded by the episode's
 * own call limit; a turn it does not know is rendered by `renderToolCalls`.
 */
export class ToolCallReplays {
  readonly #texts = new Map<string, string>();

  remember(answer: ParsedAnswer, completionText: string): void {
    if (answer.toolCalls.length > 0) this.#texts.set(answerKey(answer.text, answer.toolCalls), completionText);
  }

  /** The assistant message content to record for a replayed turn. */
  replay(text: string, calls: readonly ReplayedToolCall[]): string {
    if (calls.length === 0) return text;
    return this.#texts.get(answerKey(text, calls)) ?? renderToolCalls(text, calls);
  }
}
