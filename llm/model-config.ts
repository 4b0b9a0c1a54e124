import { z } from "zod";
import { A3rError } from "../core/errors.ts";

const modelPriceSchema = z.object({ input: z.number().min(0), output: z.number().min(0), cachedInput: z.number().min(0) }).strict();

const sharedFields = {
  model: z.string().min(1).optional(),
  /** SDK retries of transient failures; we never retry on top. */
  maxRetries: z.number().int().min(0).max(10).default(2),
  /** Deadline of one `complete` call, repair round included. */
  timeoutMs: z.number().int().positive().optional(),
  /** The model's context window in tokens (prompt plus answer); unset: asked of an OpenAI-compatible server. */
  contextTokens: z.number().int().positive().optional(),
  /** The most output tokens one answer may take (a slow local model: the bound of a call's time); unset: what the caller asks. */
  maxOutputTokens: z.number().int().positive().optional(),
  /** USD per million tokens by model name or prefix, over llm/prices.ts. */
  prices: z.record(z.string(), modelPriceSchema).optional(),
};

const httpFields = {
  apiKey: z.string().min(1, "the API key is empty"),
  baseUrl: z.url().optional(),
  headers: z.record(z.string(), z.string()).optional(),
};

/**
 * The providers a3r can call: the one list. The config schema below has a branch for each,
 * `chatModelFromEnv` accepts these names in A3R_LLM_PROVIDER, and the leader's planner
 * choice refuses any other (llm/index.ts exports it).
 */
export const providerNames = ["anthropic", "openai", "scripted"] as const;
export type ProviderName = (typeof providerNames)[number];

export function isProviderName(name: string): name is ProviderName {
  return (providerNames as readonly string[]).includes(name);
}

/** The names for a message: "anthropic, openai or scripted"; `describe` may add words to one. */
export function providerList(conjunction: "or" | "and" = "or", describe: (name: ProviderName) => string = (name) => name): string {
  const names = providerNames.map(describe);
  return `${names.slice(0, -1).join(", ")} ${conjunction} ${names[names.length - 1]}`;
}

export const chatModelConfigSchema = z.discriminatedUnion("provider", [
  z.object({ provider: z.literal("anthropic"), ...sharedFields, ...httpFields }).strict(),
  z
    .object({
      provider: z.literal("openai"),
      ...sharedFields,
      ...httpFields,
      maxTokensField: z.enum(["max_tokens", "max_completion_tokens"]).optional(),
      /** Stream answers (server-sent events), for the progress line; a server that refuses is asked again without. */
      stream: z.boolean().optional(),
    })
    .strict(),
  z
    .object({
      provider: z.literal("scripted"),
      ...sharedFields,
      /** A path to a YAML or JSON script, or the script itself. */
      script: z.union([z.string().min(1), z.array(z.unknown()), z.object({}).passthrough()]),
    })
    .strict(),
]);

export type ChatModelConfig = z.input<typeof chatModelConfigSchema>;
export type ResolvedChatModelConfig = z.output<typeof chatModelConfigSchema>;

// The schema's providers are exactly providerNames (a compile error otherwise).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaCoversProviders: Same<ResolvedChatModelConfig["provider"], ProviderName> = true;
void schemaCoversProviders;

export const defaultModels = { anthropic: "claude-sonnet-4-6", openai: "gpt-4.1" } as const;

/**
 * Validates a model config. `fieldNames` maps config fields to what the person actually
 * wrote (environment variable names when the config came from the environment), so the
 * message names the thing to fix.
 */
export function parseChatModelConfig(value: unknown, fieldNames: Record<string, string> = {}): ResolvedChatModelConfig {
  const result = chatModelConfigSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = String(issue?.path[0] ?? "provider");
  const where = fieldNames[field] ?? `llm config field "${issue?.path.map(String).join(".") || field}"`;
  throw new A3rError("LLM_CONFIG_INVALID", `invalid language model configuration at ${where}: ${issue?.message ?? "invalid"}`, {
    where,
    hint: `Fix ${where}; providers are ${providerList("and")} (see llm/README.md).`,
  });
}
