import type { FakeResponse } from "./llm-servers/fake-provider-server.ts";

/**
 * Structured answers as the providers' HTTP APIs send them, for the local wire-format
 * server of llm/testing (FakeProviderServer): what the real `openai` and
 * `@anthropic-ai/sdk` clients parse, with the token counts a test then finds in the
 * ledger. `schemaName` is the name the request asked for (Anthropic answers by calling
 * the tool of that name; OpenAI returns the JSON as the message content).
 */
export interface WireUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the prompt cache (part of `inputTokens`). */
  cachedTokens?: number;
}

export type WireProvider = "openai" | "anthropic";

export function openAiWireAnswer(answer: unknown, usage: WireUsage): FakeResponse {
  return {
    body: {
      id: "chatcmpl-wire",
      object: "chat.completion",
      created: 1764410000,
      model: "gpt-4.1-2025-04-14",
      choices: [{ index: 0, message: { role: "assistant", content: JSON.stringify(answer), refusal: null }, logprobs: null, finish_reason: "stop" }],
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens,
        prompt_tokens_details: { cached_tokens: usage.cachedTokens ?? 0 },
      },
    },
  };
}

/** Anthropic counts cache reads apart from `input_tokens`; a3r books their sum as input. */
export function anthropicWireAnswer(schemaName: string, answer: unknown, usage: WireUsage): FakeResponse {
  const cached = usage.cachedTokens ?? 0;
  return {
    body: {
      id: `msg_${schemaName}`,
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-6",
      content: [{ type: "tool_use", id: `toolu_${schemaName}`, name: schemaName, input: answer }],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: usage.inputTokens - cached, cache_creation_input_tokens: 0, cache_read_input_tokens: cached, output_tokens: usage.outputTokens },
    },
  };
}

export function wireAnswer(provider: WireProvider, schemaName: string, answer: unknown, usage: WireUsage): FakeResponse {
  return provider === "openai" ? openAiWireAnswer(answer, usage) : anthropicWireAnswer(schemaName, answer, usage);
}

/** The system prompt of a recorded request body. */
export function wireSystemPrompt(provider: WireProvider, body: Record<string, unknown>): string {
  if (provider === "openai") {
    const messages = body.messages as { role: string; content: string }[];
    return messages
      .filter((message) => message.role === "system" || message.role === "developer")
      .map((message) => message.content)
      .join("\n");
  }
  return (body.system as { text: string }[]).map((block) => block.text).join("\n");
}

/** The structured-output schema name a recorded request body asks for. */
export function wireSchemaName(provider: WireProvider, body: Record<string, unknown>): string {
  if (provider === "openai") return (body.response_format as { json_schema: { name: string } }).json_schema.name;
  return (body.tool_choice as { name: string }).name;
}

/** The text of the last user message of a recorded request body (the prompt the model read). */
export function wireLastUserMessage(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: string | { type: string; text?: string }[] }[];
  const last = messages.filter((message) => message.role === "user").at(-1);
  if (!last) return "";
  return typeof last.content === "string" ? last.content : last.content.map((block) => block.text ?? "").join("\n");
}
