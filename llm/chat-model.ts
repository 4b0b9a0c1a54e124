import type { z } from "zod";
import type { ContextWindow } from "./context-window.ts";
import type { PriceBook } from "./prices.ts";
import type { TokenUsage } from "./token-usage.ts";

/** The ledger roles a call is booked under; any other string is accepted and booked as is. */
export type LlmRole = "frame" | "plan" | "write" | "analyze" | "diagnose" | "other";

export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** Converted to JSON Schema for the provider; the input a model sends back is NOT validated against it. */
  inputSchema: z.ZodType;
}

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

export type { TokenUsage } from "./token-usage.ts";

export interface ChatRequest<Schema extends z.ZodType = z.ZodType<never>> {
  system?: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** Structured output: the answer is validated with this schema (one repair round on failure). */
  schema?: Schema;
  /** Name under which the schema is shown to the model; defaults to "answer". */
  schemaName?: string;
  maxTokens: number;
  temperature?: number;
  signal?: AbortSignal;
  /** Ledger role; defaults to "other". */
  role?: LlmRole | (string & {});
}

export interface ChatResult<T = never> {
  text: string;
  /** Present when the request had a schema and the model answered (instead of calling a tool). */
  parsed?: T;
  toolCalls?: ToolCall[];
  /** Summed over every round trip this call made, a repair round included. */
  usage: TokenUsage;
  /** Summed like usage. */
  costUsd: number;
  model: string;
  provider: string;
  stopReason?: string;
}

/**
 * The provider-neutral chat port: one request in, one answer out.
 *
 * What the contract leaves out, on purpose:
 * - streaming to the caller: callers get whole answers; a provider that streams reports the
 *   tokens so far to the progress line only (llm/progress.ts);
 * - multi-turn tool use: tool calls come back to the caller, who decides what to do; there
 *   is no tool-result message and no agent loop here;
 * - retries: the SDKs retry transient failures (`maxRetries`); an error that reaches the
 *   caller is final for this call and carries a stable code (core/errors.ts) saying whether
 *   a later try could help;
 * - images, documents, reasoning settings and other provider-specific features.
 *
 * Every round trip (a repair round too, success or failure) is booked in the usage sink
 * given to the model when it was created, before `complete` returns or throws.
 */
export interface ChatModel {
  readonly provider: string;
  readonly model: string;
  /** The prices this model books its calls at (its config's `prices` over llm/prices.ts). */
  readonly priceBook?: PriceBook;
  /**
   * How many tokens one call may hold (prompt plus answer), when known: A3R_LLM_CONTEXT, or
   * what an OpenAI-compatible server states. Callers build prompts to fit it (llm/context-window.ts).
   */
  contextWindow?(): Promise<ContextWindow | undefined>;
  complete<Schema extends z.ZodType = z.ZodType<never>>(request: ChatRequest<Schema>): Promise<ChatResult<z.output<Schema>>>;
}
