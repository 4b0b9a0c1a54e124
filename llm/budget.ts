import type { z } from "zod";
import { A3rError } from "../core/errors.ts";
import type { ChatModel, ChatRequest, ChatResult } from "./chat-model.ts";
import { createPriceBook, type ModelPrice, type PriceBook } from "./prices.ts";

/** What a campaign has spent on language models: input plus output tokens, and US dollars. */
export interface LlmSpending {
  tokens: number;
  usd: number;
}

/** A limit per measure; a measure left out is not limited. */
export interface LlmBudgetLimit {
  tokens?: number;
  usd?: number;
}

export interface LlmBudgetOptions {
  limit: LlmBudgetLimit;
  /**
   * What was spent so far, asked before every call. In a campaign it is read from the
   * ledger (see `ledgerSpending` in campaign/llm-spending.ts), so a resumed campaign and the
   * workers' calls count as well as this process's.
   */
  spent: () => Promise<LlmSpending> | LlmSpending;
  /** Prices for the cost estimate, over llm/prices.ts; default: the model's own price book. */
  prices?: Readonly<Record<string, ModelPrice>>;
  /** How the person names each limit, for the message (default: the topic's fields). */
  names?: { tokens: string; usd: string };
  /** The fix the refusal suggests (default: raise the topic's budget and resume). */
  hint?: string;
}

export const topicBudgetNames = { tokens: "budgets.llm_tokens", usd: "budgets.llm_usd" } as const;

/** Characters per token in the estimate: English prose averages about four. */
const charactersPerToken = 4;

/**
 * A deliberately pessimistic guess of what one call can cost before it is sent: every
 * input character at a quarter token, and the whole `maxTokens` as output. Schemas and
 * tool schemas are counted through their descriptions only, and a repair round (a second
 * round trip of a structured call) is not foreseen, so a call can still go over by that
 * much; the next call is then refused.
 */
export function estimateCall(request: ChatRequest<z.ZodType>, model: string, priceBook: PriceBook): LlmSpending {
  let characters = request.system?.length ?? 0;
  for (const message of request.messages) characters += message.content.length;
  for (const tool of request.tools ?? []) characters += tool.name.length + tool.description.length;
  const inputTokens = Math.ceil(characters / charactersPerToken);
  const outputTokens = request.maxTokens;
  return { tokens: inputTokens + outputTokens, usd: priceBook.costOf(model, { inputTokens, outputTokens, cachedTokens: 0 }) };
}

/**
 * Wraps a model so that each call is checked against the budget BEFORE anything is sent:
 * when what was spent, plus what calls of this wrapper still in flight may spend, plus the
 * estimate of this call would pass a limit, the call is refused with LLM_BUDGET_EXCEEDED
 * (nothing is sent, nothing is booked). A call that goes through is booked by the wrapped
 * model's own sink, as always.
 *
 * Left out: stopping a call midway (an answer is never cut off for money), and sharing
 * the in-flight reservations between processes (each reads the ledger; concurrent
 * processes can together pass the limit by their calls in flight).
 */
export function withBudget(model: ChatModel, options: LlmBudgetOptions): ChatModel {
  const { tokens, usd } = options.limit;
  for (const [name, value] of [
    ["tokens", tokens],
    ["usd", usd],
  ] as const) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0))
      throw new RangeError(`the ${name} limit of an LLM budget must be a positive number, got ${value}`);
  }
  if (tokens === undefined && usd === undefined) return model;
  const names = options.names ?? topicBudgetNames;
  // The estimate prices a call as the model will book it, a model config's own prices included.
  const priceBook = options.prices !== undefined ? createPriceBook(options.prices) : (model.priceBook ?? createPriceBook());
  // Estimates of this wrapper's calls that have not been booked yet.
  const reserved: LlmSpending = { tokens: 0, usd: 0 };

  async function complete(request: ChatRequest<z.ZodType>): Promise<ChatResult<unknown>> {
    const estimate = estimateCall(request, model.model, priceBook);
    const booked = await options.spent();
    const spent = { tokens: booked.tokens + reserved.tokens, usd: booked.usd + reserved.usd };
    const role = request.role ?? "other";
    if (tokens !== undefined && spent.tokens + estimate.tokens > tokens) {
      throw budgetExceeded(
        names.tokens,
        `${formatTokens(spent.tokens)} tokens spent, and this ${role} call may take up to ${formatTokens(estimate.tokens)} more, over the budget of ${formatTokens(tokens)} tokens`,
        options.hint,
        { measure: "tokens", role, spent, estimate, limit: tokens },
      );
    }
    if (usd !== undefined && spent.usd + estimate.usd > usd) {
      throw budgetExceeded(
        names.usd,
        `${formatUsd(spent.usd)} spent, and this ${role} call may cost up to ${formatUsd(estimate.usd)} more, over the budget of ${formatUsd(usd)}`,
        options.hint,
        { measure: "usd", role, spent, estimate, limit: usd },
      );
    }
    reserved.tokens += estimate.tokens;
    reserved.usd += estimate.usd;
    try {
      return await model.complete(request);
    } finally {
      reserved.tokens -= estimate.tokens;
      reserved.usd -= estimate.usd;
    }
  }

  // Keep what the wrapped model exposes besides the port (a scripted model's `requests`).
  return Object.assign(Object.create(model) as ChatModel, { provider: model.provider, model: model.model, complete: complete as ChatModel["complete"] });
}

function budgetExceeded(name: string, what: string, hint: string | undefined, details: Record<string, unknown>): A3rError {
  return new A3rError("LLM_BUDGET_EXCEEDED", `language-model budget ${name} would be exceeded: ${what}; the call was not sent`, {
    where: name,
    hint: hint ?? `Raise \`${name}\` in the topic's front matter and resume the campaign, or accept the stop.`,
    details,
  });
}

export function formatTokens(tokens: number): string {
  return Math.round(tokens).toLocaleString("en-US");
}

export function formatUsd(usd: number): string {
  return `$${usd >= 1 ? usd.toFixed(2) : usd.toFixed(4)}`;
}
