import Anthropic from "@anthropic-ai/sdk";
import type { BackendRequest, BackendResponse, ChatBackend } from "./backend.ts";
import type { ToolCall } from "./chat-model.ts";
import { toModelJsonSchema } from "./model-schema.ts";
import { toProviderError } from "./provider-errors.ts";

export interface AnthropicProviderConfig {
  model: string;
  apiKey: string;
  /** Defaults to https://api.anthropic.com; the SDK appends /v1/messages. */
  baseUrl?: string;
  /** SDK retries of transient failures (429, 5xx, connection). Default 2. */
  maxRetries?: number;
  /** SDK timeout per HTTP attempt. */
  requestTimeoutMs?: number;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /** Named in the hint when the key is refused. */
  apiKeyName?: string;
}

type CreateParams = Anthropic.Messages.MessageCreateParamsNonStreaming;
type InputSchema = Anthropic.Messages.Tool.InputSchema;

/**
 * Anthropic Messages API. The system prompt is sent as one text block marked for prompt
 * caching, since leader prompts repeat long skill texts call after call. A structured
 * answer is a forced call of a tool named after the schema, whose input is the answer.
 */
export function createAnthropicBackend(config: AnthropicProviderConfig): ChatBackend {
  // Every option the SDK would otherwise read from the environment is given explicitly:
  // only the factory reads the environment.
  const client = new Anthropic({
    apiKey: config.apiKey,
    baseURL: config.baseUrl ?? "https://api.anthropic.com",
    maxRetries: config.maxRetries ?? 2,
    ...(config.requestTimeoutMs === undefined ? {} : { timeout: config.requestTimeoutMs }),
    ...(config.headers === undefined ? {} : { defaultHeaders: config.headers }),
    ...(config.fetch === undefined ? {} : { fetch: config.fetch }),
    logLevel: "off",
  });

  return {
    provider: "anthropic",
    model: config.model,
    async send(request: BackendRequest): Promise<BackendResponse> {
      let message: Anthropic.Messages.Message;
      try {
        message = await client.messages.create(toWire(config.model, request), { signal: request.callSignal.signal });
      } catch (error) {
        throw toProviderError(error, {
          provider: "anthropic",
          apiKeyName: config.apiKeyName ?? "ANTHROPIC_API_KEY",
          classes: Anthropic,
          callSignal: request.callSignal,
          secrets: [config.apiKey],
        });
      }
      return fromWire(message, request);
    },
  };
}

function toWire(model: string, request: BackendRequest): CreateParams {
  const tools: Anthropic.Messages.Tool[] = (request.tools ?? []).map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: toModelJsonSchema(tool.inputSchema) as InputSchema,
  }));
  const output = request.output;
  if (output) {
    tools.push({
      name: output.name,
      description: "Give your final answer by calling this tool; its input is the answer.",
      input_schema: output.jsonSchema as InputSchema,
    });
  }
  return {
    model,
    max_tokens: request.maxTokens,
    messages: request.messages.map((message) => ({ role: message.role, content: message.content })),
    ...(request.system === undefined ? {} : { system: [{ type: "text" as const, text: request.system, cache_control: { type: "ephemeral" as const } }] }),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(tools.length === 0 ? {} : { tools }),
    // With tools of its own the model may call one of them or answer; without, it must answer.
    ...(output === undefined ? {} : { tool_choice: request.tools?.length ? { type: "any" as const } : { type: "tool" as const, name: output.name } }),
  };
}

function fromWire(message: Anthropic.Messages.Message, request: BackendRequest): BackendResponse {
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  let structured: unknown;
  for (const block of message.content) {
    if (block.type === "text") texts.push(block.text);
    else if (block.type === "tool_use") {
      if (request.output && block.name === request.output.name && structured === undefined) structured = block.input;
      else toolCalls.push({ id: block.id, name: block.name, input: block.input });
    }
  }
  const usage = message.usage;
  const cached = usage.cache_read_input_tokens ?? 0;
  return {
    text: texts.join(""),
    ...(structured === undefined ? {} : { structured }),
    toolCalls,
    usage: {
      // Anthropic counts cache reads and writes apart from input_tokens; the port counts all input.
      inputTokens: usage.input_tokens + cached + (usage.cache_creation_input_tokens ?? 0),
      outputTokens: usage.output_tokens,
      cachedTokens: cached,
    },
    model: message.model,
    ...(message.stop_reason ? { stopReason: message.stop_reason } : {}),
  };
}
