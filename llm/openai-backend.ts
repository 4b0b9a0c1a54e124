import OpenAI from "openai";
import type { BackendRequest, BackendResponse, ChatBackend } from "./backend.ts";
import type { ToolCall } from "./chat-model.ts";
import { toModelJsonSchema } from "./model-schema.ts";
import { toProviderError } from "./provider-errors.ts";

export interface OpenAiProviderConfig {
  model: string;
  apiKey: string;
  /** Any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp): e.g. http://localhost:8000/v1. */
  baseUrl?: string;
  /** SDK retries of transient failures (429, 5xx, connection). Default 2. */
  maxRetries?: number;
  /** SDK timeout per HTTP attempt. */
  requestTimeoutMs?: number;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /**
   * OpenAI's own newer models want `max_completion_tokens`; many compatible servers only
   * know `max_tokens`. Default: the former for api.openai.com, the latter for a base URL.
   */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
  /** Named in the hint when the key is refused. */
  apiKeyName?: string;
}

type CreateParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;

/**
 * OpenAI Chat Completions, and any server that speaks it. A structured answer uses
 * `response_format: json_schema`, strict when the schema allows it (every property
 * required, no extra keys), else non-strict so the server still sees the schema.
 */
export function createOpenAiBackend(config: OpenAiProviderConfig): ChatBackend {
  // Every option the SDK would otherwise read from the environment is given explicitly.
  const client = new OpenAI({
    apiKey: config.apiKey,
    baseURL: config.baseUrl ?? "https://api.openai.com/v1",
    organization: null,
    project: null,
    maxRetries: config.maxRetries ?? 2,
    ...(config.requestTimeoutMs === undefined ? {} : { timeout: config.requestTimeoutMs }),
    ...(config.headers === undefined ? {} : { defaultHeaders: config.headers }),
    ...(config.fetch === undefined ? {} : { fetch: config.fetch }),
    logLevel: "off",
  });
  const maxTokensField = config.maxTokensField ?? (config.baseUrl === undefined ? "max_completion_tokens" : "max_tokens");

  return {
    provider: "openai",
    model: config.model,
    async send(request: BackendRequest): Promise<BackendResponse> {
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await client.chat.completions.create(toWire(config.model, maxTokensField, request), {
          signal: request.callSignal.signal,
        });
      } catch (error) {
        throw toProviderError(error, {
          provider: "openai",
          apiKeyName: config.apiKeyName ?? "OPENAI_API_KEY",
          classes: OpenAI,
          callSignal: request.callSignal,
          secrets: [config.apiKey],
        });
      }
      return fromWire(completion, config.model);
    },
  };
}

function toWire(model: string, maxTokensField: "max_tokens" | "max_completion_tokens", request: BackendRequest): CreateParams {
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    ...(request.system === undefined ? [] : [{ role: "system" as const, content: request.system }]),
    ...request.messages.map((message) => ({ role: message.role, content: message.content })),
  ];
  const tools: OpenAI.Chat.Completions.ChatCompletionFunctionTool[] = (request.tools ?? []).map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: toModelJsonSchema(tool.inputSchema) },
  }));
  const output = request.output;
  return {
    model,
    messages,
    [maxTokensField]: request.maxTokens,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(output === undefined
      ? {}
      : {
          response_format: {
            type: "json_schema" as const,
            json_schema: { name: output.name, schema: output.jsonSchema, strict: output.strictCompatible },
          },
        }),
  };
}

function fromWire(completion: OpenAI.Chat.Completions.ChatCompletion, requestedModel: string): BackendResponse {
  const choice = completion.choices[0];
  const message = choice?.message;
  const toolCalls: ToolCall[] = (message?.tool_calls ?? []).flatMap((call) =>
    call.type === "function" ? [{ id: call.id, name: call.function.name, input: parseArguments(call.function.arguments) }] : [],
  );
  const usage = completion.usage;
  return {
    text: message?.content ?? "",
    toolCalls,
    usage: {
      inputTokens: usage?.prompt_tokens ?? 0,
      outputTokens: usage?.completion_tokens ?? 0,
      cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    },
    // Some compatible servers leave the model field empty.
    model: completion.model || requestedModel,
    ...(choice?.finish_reason ? { stopReason: choice.finish_reason } : {}),
  };
}

/** Tool arguments arrive as a JSON string that a model may have broken; keep it raw then. */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
