import { z } from "zod";
import type { ChatMessage } from "../../engines/port/engine.ts";
import type { ToolCallReplays } from "./tool-calls.ts";
import { functionTool, namedEvent, textPieces, type GatewayAnswer, type TranslatedRequest } from "./wire-types.ts";

/**
 * Anthropic's Messages API (`POST /v1/messages`) on the gateway, so the Anthropic SDK and
 * Claude-Code-style agents attach with the server's URL as base URL and the episode's key
 * (sent as `x-api-key`, or as a Bearer token). The request becomes the internal ChatMessage
 * conversation: `system` first, text blocks as message content, an assistant's `tool_use`
 * blocks as the tool-call text the policy wrote (tool-calls.ts), a user's `tool_result`
 * blocks as `tool` messages. The answer's tool calls come back as `tool_use` blocks.
 */

const textBlockSchema = z.looseObject({ type: z.literal("text"), text: z.string() });
const blockSchema = z.looseObject({ type: z.string() });
const systemSchema = z.union([z.string(), z.array(blockSchema)]);
const toolResultContentSchema = z.union([z.string(), z.array(blockSchema)]).optional();
const messageSchema = z.looseObject({
  role: z.enum(["user", "assistant"]),
  content: z.union([z.string(), z.array(blockSchema)]),
});
const toolSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.unknown().optional(),
  type: z.string().optional(),
});

export const anthropicMessagesRequestSchema = z.looseObject({
  model: z.string().optional(),
  messages: z.array(messageSchema).min(1, "give at least one message"),
  system: systemSchema.optional(),
  max_tokens: z.number().int().positive(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  tools: z.array(toolSchema).optional(),
});
export type AnthropicMessagesRequest = z.output<typeof anthropicMessagesRequestSchema>;
/** `POST /v1/messages/count_tokens` (Claude Code asks it): a messages request without max_tokens. */
export const anthropicCountTokensSchema = anthropicMessagesRequestSchema.extend({ max_tokens: z.number().int().positive().optional() });

const honoured = new Set(["model", "messages", "system", "max_tokens", "temperature", "top_p", "stop_sequences", "stream", "tools"]);

export function translateAnthropicRequest(
  body: AnthropicMessagesRequest | z.output<typeof anthropicCountTokensSchema>,
  replays: ToolCallReplays,
): TranslatedRequest {
  const ignored = Object.keys(body).filter((key) => !honoured.has(key));
  const ignoredBlock = (type: string): void => {
    const name = `content block "${type.slice(0, 40)}"`;
    if (!ignored.includes(name)) ignored.push(name);
  };
  const messages: ChatMessage[] = [];
  if (body.system !== undefined) {
    const system = typeof body.system === "string" ? body.system : blockText(body.system, ignoredBlock);
    if (system !== "") messages.push({ role: "system", content: system });
  }
  for (const message of body.messages) {
    if (typeof message.content === "string") {
      messages.push({ role: message.role, content: message.content });
    } else if (message.role === "assistant") {
      messages.push(assistantMessage(message.content, replays, ignoredBlock));
    } else {
      messages.push(...userMessages(message.content, ignoredBlock));
    }
  }
  const tools = body.tools?.map((tool) => (tool.input_schema === undefined && tool.type ? tool : functionTool(tool.name, tool.description, tool.input_schema)));
  return {
    messages,
    ...(tools && tools.length > 0 ? { tools } : {}),
    ...(body.temperature === undefined ? {} : { temperature: body.temperature }),
    ...(body.top_p === undefined ? {} : { topP: body.top_p }),
    ...(body.max_tokens === undefined ? {} : { maxTokens: body.max_tokens }),
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences } : {}),
    stream: body.stream === true,
    ...(body.model === undefined ? {} : { model: body.model }),
    ignored,
  };
}

function blockText(blocks: readonly z.output<typeof blockSchema>[], ignoredBlock: (type: string) => void): string {
  const parts: string[] = [];
  for (const block of blocks) {
    const text = textBlockSchema.safeParse(block);
    if (text.success) parts.push(text.data.text);
    else ignoredBlock(block.type);
  }
  return parts.join("");
}

const toolUseSchema = z.looseObject({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.unknown() });

function assistantMessage(blocks: readonly z.output<typeof blockSchema>[], replays: ToolCallReplays, ignoredBlock: (type: string) => void): ChatMessage {
  const text: string[] = [];
  const calls: Array<{ name: string; arguments: unknown }> = [];
  for (const block of blocks) {
    const use = toolUseSchema.safeParse(block);
    if (use.success) calls.push({ name: use.data.name, arguments: use.data.input ?? {} });
    else if (block.type === "text" && typeof block.text === "string") text.push(block.text);
    else ignoredBlock(block.type);
  }
  return { role: "assistant", content: replays.replay(text.join(""), calls) };
}

const toolResultSchema = z.looseObject({ type: z.literal("tool_result"), tool_use_id: z.string(), content: toolResultContentSchema });

/** A user turn's blocks in order: text runs as user messages, each tool result as a tool message. */
function userMessages(blocks: readonly z.output<typeof blockSchema>[], ignoredBlock: (type: string) => void): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let text: string[] = [];
  const flushText = (): void => {
    if (text.length > 0) messages.push({ role: "user", content: text.join("") });
    text = [];
  };
  for (const block of blocks) {
    const result = toolResultSchema.safeParse(block);
    if (result.success) {
      flushText();
      const content = result.data.content;
      messages.push({
        role: "tool",
        content: typeof content === "string" ? content : blockText(content ?? [], ignoredBlock),
        tool_call_id: result.data.tool_use_id,
      });
    } else if (block.type === "text" && typeof block.text === "string") {
      text.push(block.text);
    } else {
      ignoredBlock(block.type);
    }
  }
  flushText();
  return messages.length > 0 ? messages : [{ role: "user", content: "" }];
}

type ContentBlock = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: unknown };

function contentOf(answer: GatewayAnswer): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (answer.parsed.text !== "" || answer.parsed.toolCalls.length === 0) blocks.push({ type: "text", text: answer.parsed.text });
  for (const call of answer.parsed.toolCalls) blocks.push({ type: "tool_use", id: call.id, name: call.name, input: JSON.parse(call.arguments) as unknown });
  return blocks;
}

function stopReason(answer: GatewayAnswer): string {
  if (answer.parsed.toolCalls.length > 0) return "tool_use";
  return answer.result.finishReason === "length" ? "max_tokens" : "end_turn";
}

export function anthropicAnswer(answer: GatewayAnswer): object {
  return {
    id: `msg_${answer.id}`,
    type: "message",
    role: "assistant",
    model: answer.model,
    content: contentOf(answer),
    stop_reason: stopReason(answer),
    stop_sequence: null,
    usage: { input_tokens: answer.usage.promptTokens, output_tokens: answer.usage.completionTokens },
  };
}

/** The whole answer as Anthropic's event sequence: message_start, blocks (start, deltas, stop), message_delta, message_stop. */
export function anthropicStream(answer: GatewayAnswer): string {
  const events = [
    namedEvent("message_start", {
      type: "message_start",
      message: {
        id: `msg_${answer.id}`,
        type: "message",
        role: "assistant",
        model: answer.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: answer.usage.promptTokens, output_tokens: 0 },
      },
    }),
  ];
  contentOf(answer).forEach((block, index) => {
    if (block.type === "text") {
      events.push(namedEvent("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }));
      for (const piece of textPieces(block.text)) {
        events.push(namedEvent("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }));
      }
    } else {
      events.push(
        namedEvent("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        }),
        namedEvent("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
        }),
      );
    }
    events.push(namedEvent("content_block_stop", { type: "content_block_stop", index }));
  });
  events.push(
    namedEvent("message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReason(answer), stop_sequence: null },
      usage: { output_tokens: answer.usage.completionTokens },
    }),
    namedEvent("message_stop", { type: "message_stop" }),
  );
  return events.join("");
}

/** Anthropic's error body, so the SDK's error classes carry the gateway's message. */
export function anthropicError(type: string, message: string): object {
  return { type: "error", error: { type: type === "server_error" ? "api_error" : type, message } };
}
