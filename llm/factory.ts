import { A3rError } from "../core/errors.ts";
import { parseDuration } from "../core/duration.ts";
import { createLogger } from "../core/logger.ts";
import type { ChatBackend } from "./backend.ts";
import type { ChatModel } from "./chat-model.ts";
import { parseTokenCount, readServedContext, type ContextWindow } from "./context-window.ts";
import { createChatModelFromBackend } from "./chat-model-core.ts";
import { defaultModels, isProviderName, parseChatModelConfig, providerList, type ChatModelConfig } from "./model-config.ts";
import { createPriceBook, type ModelPrice } from "./prices.ts";
import { createScriptedBackend, type ScriptedBackend } from "./scripted-backend.ts";
import { loadScript, parseScript, type ScriptDefinition } from "./scripted-script.ts";
import type { LlmUsageSink } from "./usage-sink.ts";

export interface ChatModelDependencies {
  /** Every call is booked here (the campaign ledger in production). */
  sink: LlmUsageSink;
  /** Replaces global fetch for the SDK providers. */
  fetch?: typeof fetch;
  /** Receives warnings such as "no price for model X" (default: the a3r logger). */
  warn?: (message: string) => void;
  now?: () => Date;
}

/** A scripted model also shows what it was asked. */
export type ScriptedChatModel = ChatModel & Pick<ScriptedBackend, "requests" | "remainingSteps">;

/**
 * A scripted model from a script given in code (no file), for other modules' tests:
 * synchronous, and typed so that `requests` can be inspected without a cast.
 */
export function createScriptedChatModel(
  script: ScriptDefinition,
  deps: ChatModelDependencies,
  options: { model?: string; timeoutMs?: number; prices?: Record<string, ModelPrice> } = {},
): ScriptedChatModel {
  const backend = createScriptedBackend(parseScript(script), options.model === undefined ? {} : { model: options.model });
  const model = createChatModelFromBackend(backend, {
    sink: deps.sink,
    priceBook: createPriceBook(options.prices, deps.warn ?? (() => {})),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
  return Object.assign(model, { requests: backend.requests, remainingSteps: () => backend.remainingSteps() });
}

/** Builds a model from a config object; reads no environment variable. */
export async function createChatModel(config: ChatModelConfig, deps: ChatModelDependencies): Promise<ChatModel> {
  return createChatModelWithNames(config, deps, {});
}

async function createChatModelWithNames(config: ChatModelConfig, deps: ChatModelDependencies, fieldNames: Record<string, string>): Promise<ChatModel> {
  const resolved = parseChatModelConfig(config, fieldNames);
  const warn = deps.warn ?? defaultWarn();
  const baseUrl = resolved.provider === "scripted" ? undefined : resolved.baseUrl;
  // A local server's model has no price by nature: its calls are counted in tokens and time
  // (the ledger, the report), and the planner line says so once; no warning mid-output.
  const priceBook = createPriceBook(resolved.prices, (model) => {
    if (baseUrl === undefined) warn(`no price known for model "${model}": its calls are booked at $0; add it to the model config's prices`);
  });
  const knobs = { timeout: fieldNames.timeoutMs ?? "timeoutMs", context: fieldNames.contextTokens ?? "contextTokens" };
  const coreOptions = {
    sink: deps.sink,
    priceBook,
    knobs,
    ...(resolved.timeoutMs === undefined ? {} : { timeoutMs: resolved.timeoutMs }),
    ...(resolved.maxOutputTokens === undefined ? {} : { maxOutputTokens: resolved.maxOutputTokens }),
    ...(deps.now === undefined ? {} : { now: deps.now }),
    contextWindow: contextWindowOf(resolved, knobs.context, deps.fetch),
  };
  if (resolved.provider === "scripted") {
    const source = typeof resolved.script === "string" ? resolved.script : "script";
    const script = typeof resolved.script === "string" ? await loadScript(resolved.script) : parseScript(resolved.script, source);
    const scripted = createScriptedBackend(script, { source, ...(resolved.model === undefined ? {} : { model: resolved.model }) });
    const model = createChatModelFromBackend(scripted, coreOptions);
    const result: ScriptedChatModel = Object.assign(model, {
      requests: scripted.requests,
      remainingSteps: () => scripted.remainingSteps(),
    });
    return result;
  }
  const http = {
    model: resolved.model ?? defaultModels[resolved.provider],
    apiKey: resolved.apiKey,
    maxRetries: resolved.maxRetries,
    ...(resolved.baseUrl === undefined ? {} : { baseUrl: resolved.baseUrl }),
    ...(resolved.headers === undefined ? {} : { headers: resolved.headers }),
    ...(resolved.timeoutMs === undefined ? {} : { requestTimeoutMs: resolved.timeoutMs }),
    ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
    ...(fieldNames.apiKey === undefined ? {} : { apiKeyName: fieldNames.apiKey }),
  };
  // The SDKs are loaded only when a model of theirs is made: every `a3r` command imports
  // llm/, and loading both SDKs costs each worker process about half a second at start.
  const backend: ChatBackend =
    resolved.provider === "anthropic"
      ? (await import("./anthropic-backend.ts")).createAnthropicBackend(http)
      : (await import("./openai-backend.ts")).createOpenAiBackend({
          ...http,
          ...(resolved.maxTokensField === undefined ? {} : { maxTokensField: resolved.maxTokensField }),
          ...(resolved.stream === undefined ? {} : { stream: resolved.stream }),
        });
  return createChatModelFromBackend(backend, coreOptions);
}

/**
 * The window: the config's (A3R_LLM_CONTEXT) when set, else what an OpenAI-compatible
 * server at a base URL states, asked once; hosted providers and scripts: unknown.
 */
function contextWindowOf(
  resolved: ReturnType<typeof parseChatModelConfig>,
  knob: string,
  fetchImpl: typeof fetch | undefined,
): () => Promise<ContextWindow | undefined> {
  if (resolved.contextTokens !== undefined) {
    const known: ContextWindow = { tokens: resolved.contextTokens, source: knob };
    return async () => known;
  }
  if (resolved.provider !== "openai" || resolved.baseUrl === undefined) return async () => undefined;
  const { baseUrl, apiKey } = resolved;
  const model = resolved.model ?? defaultModels.openai;
  let asked: Promise<ContextWindow | undefined> | undefined;
  return () => {
    asked ??= readServedContext({ baseUrl, model, apiKey, ...(fetchImpl === undefined ? {} : { fetch: fetchImpl }) }).then((tokens) =>
      tokens === undefined ? undefined : { tokens, source: `the server's /v1/models (max_model_len of ${model})` },
    );
    return asked;
  };
}

type Environment = Record<string, string | undefined>;

interface EnvChoice {
  provider: string;
  /** The variable that decided the provider. */
  source: string;
}

function chooseProvider(env: Environment): EnvChoice | undefined {
  const named = env.A3R_LLM_PROVIDER?.trim();
  if (named) return { provider: named, source: "A3R_LLM_PROVIDER" };
  if (env.ANTHROPIC_API_KEY) return { provider: "anthropic", source: "ANTHROPIC_API_KEY" };
  if (env.OPENAI_API_KEY) return { provider: "openai", source: "OPENAI_API_KEY" };
  return undefined;
}

/**
 * One line saying which model the environment selects, e.g.
 * "anthropic claude-sonnet-4-6 (from A3R_LLM_PROVIDER)"; undefined when none is
 * configured. An unknown provider name is still described (not undefined), so that
 * `--planner auto` fails loudly instead of silently falling back to the heuristic.
 */
export function describeModelChoice(env: Environment = process.env): string | undefined {
  const choice = chooseProvider(env);
  if (!choice) return undefined;
  const model = env.A3R_LLM_MODEL?.trim();
  switch (choice.provider) {
    case "anthropic":
    case "openai": {
      const at = env.A3R_LLM_BASE_URL ? ` at ${env.A3R_LLM_BASE_URL}` : "";
      return `${choice.provider} ${model || defaultModels[choice.provider]}${at} (from ${choice.source})`;
    }
    case "scripted":
      return `scripted ${env.A3R_LLM_SCRIPT ?? "(no A3R_LLM_SCRIPT)"} (from ${choice.source})`;
    default:
      return `unknown provider "${choice.provider}" (from ${choice.source})`;
  }
}

/**
 * Builds the model the environment selects: A3R_LLM_PROVIDER (anthropic | openai |
 * scripted; without it, a set ANTHROPIC_API_KEY or OPENAI_API_KEY selects its provider),
 * A3R_LLM_MODEL, A3R_LLM_BASE_URL, A3R_LLM_SCRIPT, A3R_LLM_TIMEOUT (a duration such as
 * "5m"), A3R_LLM_MAX_RETRIES, A3R_LLM_CONTEXT (tokens, such as 8192 or 32k),
 * A3R_LLM_MAX_TOKENS (the most output tokens of one answer),
 * A3R_LLM_STREAM (0 turns streaming off). Throws LLM_CONFIG_INVALID naming the variable to set.
 */
export async function chatModelFromEnv(env: Environment, deps: ChatModelDependencies): Promise<ChatModel> {
  const choice = chooseProvider(env);
  if (!choice) {
    throw new A3rError("LLM_CONFIG_INVALID", "no language model is configured", {
      where: "A3R_LLM_PROVIDER",
      hint: `Set A3R_LLM_PROVIDER to ${providerList()} (with ANTHROPIC_API_KEY, OPENAI_API_KEY or A3R_LLM_SCRIPT).`,
    });
  }
  if (!isProviderName(choice.provider)) {
    throw new A3rError("LLM_CONFIG_INVALID", `A3R_LLM_PROVIDER is "${choice.provider}", which is not a provider`, {
      where: "A3R_LLM_PROVIDER",
      hint: `Set A3R_LLM_PROVIDER to ${providerList()}.`,
    });
  }
  const provider = choice.provider;
  const shared = {
    ...(env.A3R_LLM_MODEL?.trim() ? { model: env.A3R_LLM_MODEL.trim() } : {}),
    ...(env.A3R_LLM_TIMEOUT ? { timeoutMs: durationFromEnv(env.A3R_LLM_TIMEOUT) } : {}),
    ...(env.A3R_LLM_MAX_RETRIES ? { maxRetries: Number(env.A3R_LLM_MAX_RETRIES) } : {}),
    ...(env.A3R_LLM_CONTEXT
      ? { contextTokens: tokenCountFromEnv("A3R_LLM_CONTEXT", env.A3R_LLM_CONTEXT, "the model's context window in tokens, such as 8192 or 32k") }
      : {}),
    ...(env.A3R_LLM_MAX_TOKENS
      ? { maxOutputTokens: tokenCountFromEnv("A3R_LLM_MAX_TOKENS", env.A3R_LLM_MAX_TOKENS, "the most tokens one answer may take, such as 2000") }
      : {}),
  };
  const fieldNames: Record<string, string> = {
    provider: "A3R_LLM_PROVIDER",
    model: "A3R_LLM_MODEL",
    baseUrl: "A3R_LLM_BASE_URL",
    script: "A3R_LLM_SCRIPT",
    timeoutMs: "A3R_LLM_TIMEOUT",
    maxRetries: "A3R_LLM_MAX_RETRIES",
    contextTokens: "A3R_LLM_CONTEXT",
    maxOutputTokens: "A3R_LLM_MAX_TOKENS",
    stream: "A3R_LLM_STREAM",
  };
  if (provider === "scripted") {
    const script = required(env, "A3R_LLM_SCRIPT", "the path of a YAML or JSON model script");
    return createChatModelWithNames({ provider, script, ...shared }, deps, fieldNames);
  }
  const baseUrl = env.A3R_LLM_BASE_URL?.trim() || undefined;
  const keyName = provider === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
  let apiKey = env[keyName]?.trim();
  if (!apiKey && provider === "openai" && baseUrl) {
    // Local OpenAI-compatible servers (vLLM, Ollama, llama.cpp) usually take no key, but the SDK wants one.
    apiKey = "no-key";
    if (!shared.model) required(env, "A3R_LLM_MODEL", `the model name served at ${baseUrl}`);
  }
  if (!apiKey) required(env, keyName, `the API key of the ${provider} provider`);
  // Answers stream from the environment's OpenAI-compatible servers (a slow local model shows
  // its tokens coming); A3R_LLM_STREAM=0 turns it off for a proxy that breaks event streams.
  const stream = provider === "openai" ? { stream: !["0", "false", "no", "off"].includes((env.A3R_LLM_STREAM ?? "").trim().toLowerCase()) } : {};
  return createChatModelWithNames({ provider, apiKey: apiKey ?? "", ...(baseUrl ? { baseUrl } : {}), ...shared, ...stream }, deps, {
    ...fieldNames,
    apiKey: keyName,
  });
}

function required(env: Environment, name: string, what: string): string {
  const value = env[name]?.trim();
  if (value) return value;
  throw new A3rError("LLM_CONFIG_INVALID", `${name} is not set`, {
    where: name,
    hint: `Set ${name} to ${what}.`,
  });
}

function durationFromEnv(text: string): number {
  const milliseconds = parseDuration(text);
  if (milliseconds === undefined || milliseconds <= 0) {
    throw new A3rError("LLM_CONFIG_INVALID", `A3R_LLM_TIMEOUT is "${text}", which is not a duration`, {
      where: "A3R_LLM_TIMEOUT",
      hint: 'Set A3R_LLM_TIMEOUT to a duration such as "90s" or "5m".',
    });
  }
  return Math.round(milliseconds);
}

function tokenCountFromEnv(name: string, text: string, what: string): number {
  const tokens = parseTokenCount(text);
  if (tokens === undefined) {
    throw new A3rError("LLM_CONFIG_INVALID", `${name} is "${text}", which is not a token count`, {
      where: name,
      hint: `Set ${name} to ${what}.`,
    });
  }
  return tokens;
}

function defaultWarn(): (message: string) => void {
  let logger: ReturnType<typeof createLogger> | undefined;
  return (message) => {
    logger ??= createLogger("llm");
    logger.warn(message);
  };
}
