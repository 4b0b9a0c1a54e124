/**
 * How much a model can read and write in one call, and a conservative count of what a
 * prompt takes of it. A3R_LLM_CONTEXT (config `contextTokens`) wins; otherwise an
 * OpenAI-compatible server is asked (`GET /v1/models`: vLLM and a3r's reference server
 * serve `max_model_len`, llama.cpp `meta.n_ctx_train`); hosted providers say nothing and
 * are not trimmed.
 */
export interface ContextWindow {
  tokens: number;
  /** Where the figure came from, for messages: "A3R_LLM_CONTEXT", "the server's /v1/models". */
  source: string;
}

/**
 * Tokens a text takes, estimated high: one per 3 characters. Real tokenizers give 3.5 to
 * 4.5 characters per token on English and JSON, so prompts built to this estimate fit; the
 * cost is some unused room, which is better than a refused call.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3);
}

/** The context length a server's model list states for `model`, or undefined (any failure, or not stated). */
export async function readServedContext(options: {
  baseUrl: string;
  model: string;
  apiKey?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}): Promise<number | undefined> {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/models`;
  try {
    const response = await (options.fetch ?? fetch)(url, {
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
    });
    if (!response.ok) return undefined;
    return contextFromModelList(await response.json(), options.model);
  } catch {
    return undefined;
  }
}

/** Reads the window of `model` from an OpenAI-style model list (the only entry when the names differ). */
export function contextFromModelList(list: unknown, model: string): number | undefined {
  const data = (list as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const entries = data.filter((entry): entry is Record<string, unknown> => typeof entry === "object" && entry !== null);
  const entry = entries.find((item) => item.id === model) ?? (entries.length === 1 ? entries[0] : undefined);
  if (!entry) return undefined;
  const meta = entry.meta as Record<string, unknown> | undefined;
  for (const value of [entry.max_model_len, entry.context_length, entry.context_window, meta?.n_ctx_train]) {
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  }
  return undefined;
}

/** "8192", "8k" (8192), "32K" as a token count; undefined when it is not one. */
export function parseTokenCount(text: string): number | undefined {
  const match = /^\s*(\d+)\s*([kK])?\s*$/.exec(text);
  if (!match) return undefined;
  const value = Number(match[1]) * (match[2] ? 1024 : 1);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}
