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
  /**
   * Stream the answer (server-sent events) so the progress line shows tokens arriving. A
   * server that refuses streaming with a 400 naming `stream` is asked again without, and
   * from then on never streamed to. Default false.
   */
  stream?: boolean;
}

type CreateParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type Completion = OpenAI.Chat.Completions.ChatCompletion;

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
  let streaming = config.stream === true;

  const complete = async (request: BackendRequest): Promise<Completion> => {
    const wire = toWire(config.model, maxTokensField, request);
    if (streaming) {
      try {
        return await streamed(client, wire, request);
      } catch (error) {
        if (!refusesStreaming(error, OpenAI)) throw error;
        streaming = false;
      }
    }
    return client.chat.completions.create(wire, { signal: request.callSignal.signal });
  };

  return {
    provider: "openai",
    model: config.model,
    async send(request: BackendRequest): Promise<BackendResponse> {
      let completion: Completion;
      try {
        completion = await complete(request);
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

/** A 400 that is about the `stream` field: the server cannot stream (a3r's reference server, some proxies). */
function refusesStreaming(error: unknown, classes: typeof OpenAI): boolean {
  if (!(error instanceof classes.APIError) || error.status !== 400) return false;
  return /\bstream/i.test(error.message) || (error as { param?: unknown }).param === "stream";
}

/**
 * One streamed call, put back together as the completion a non-streamed call returns, so
 * the rest of the backend reads one shape. The output tokens so far (one per content or
 * argument chunk, which is what servers send) go to the progress line; the usage the last
 * chunk carries (`stream_options.include_usage`) is what is booked.
 */
async function streamed(client: OpenAI, wire: CreateParams, request: BackendRequest): Promise<Completion> {
  const stream = await client.chat.completions.create(
    { ...wire, stream: true, stream_options: { include_usage: true } },
    { signal: request.callSignal.signal },
  );
  let content = "";
  let chunks = 0;
  let model = "";
  let finish: Completion["choices"][number]["finish_reason"] | undefined;
  let usage: Completion["usage"];
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for await (const chunk of stream) {
    model ||= chunk.model;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.finish_reason) finish = choice.finish_reason;
    const delta = choice.delta;
    if (delta?.content) {
      content += delta.content;
      chunks += 1;
    }
    for (const call of delta?.tool_calls ?? []) {
      const known = calls.get(call.index) ?? { id: "", name: "", arguments: "" };
      calls.set(call.index, {
        id: call.id ?? known.id,
        name: known.name + (call.function?.name ?? ""),
        arguments: known.arguments + (call.function?.arguments ?? ""),
      });
      chunks += 1;
    }
    request.onOutput?.(usage?.completion_tokens ?? chunks);
  }
  const toolCalls = [...calls.values()].map((call) => ({ id: call.id, type: "function" as const, function: { name: call.name, arguments: call.arguments } }));
  return {
    id: "streamed",
    object: "chat.completion",
    created: 0,
    model,
    choices: [
      {
        index: 0,
        finish_reason: finish ?? "stop",
        logprobs: null,
        message: { role: "assistant", content, refusal: null, ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }) },
      },
    ],
    ...(usage ? { usage } : {}),
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
