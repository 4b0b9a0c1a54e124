import type { TokenUsage } from "./token-usage.ts";

/** USD per million tokens. `cachedInput` applies to input tokens read from a prompt cache. */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput: number;
}

/**
 * List prices by model name or name prefix (the longest matching key wins, so dated
 * snapshots such as "claude-sonnet-4-5-20250929" find their family). Prices change:
 * override them through the model config rather than trusting this table for billing.
 * Cache writes (Anthropic) are counted as plain input, a slight underestimate.
 */
export const defaultPrices: Readonly<Record<string, ModelPrice>> = {
  // Family prefixes: newer members of a family are priced like the last one we know, an
  // estimate that keeps budgets moving until the table or the config says better.
  "claude-opus": { input: 5, output: 25, cachedInput: 0.5 },
  "claude-sonnet": { input: 3, output: 15, cachedInput: 0.3 },
  "claude-haiku": { input: 1, output: 5, cachedInput: 0.1 },
  "claude-opus-4-0": { input: 15, output: 75, cachedInput: 1.5 },
  "claude-opus-4-1": { input: 15, output: 75, cachedInput: 1.5 },
  "claude-opus-4-2025": { input: 15, output: 75, cachedInput: 1.5 },
  "claude-3-7-sonnet": { input: 3, output: 15, cachedInput: 0.3 },
  "claude-3-5-sonnet": { input: 3, output: 15, cachedInput: 0.3 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cachedInput: 0.08 },
  "gpt-5": { input: 1.25, output: 10, cachedInput: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cachedInput: 0.025 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cachedInput: 0.005 },
  "gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cachedInput: 0.1 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cachedInput: 0.025 },
  "gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  o3: { input: 2, output: 8, cachedInput: 0.5 },
  "o4-mini": { input: 1.1, output: 4.4, cachedInput: 0.275 },
  scripted: { input: 0, output: 0, cachedInput: 0 },
};

export function findPrice(model: string, prices: Readonly<Record<string, ModelPrice>>): ModelPrice | undefined {
  let best: string | undefined;
  for (const key of Object.keys(prices)) {
    if (model.startsWith(key) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : prices[best];
}

export function costOf(usage: TokenUsage, price: ModelPrice): number {
  const uncachedInput = Math.max(0, usage.inputTokens - usage.cachedTokens);
  const dollars = (uncachedInput * price.input + usage.cachedTokens * price.cachedInput + usage.outputTokens * price.output) / 1_000_000;
  // Round to a millionth of a cent so sums in the ledger do not drift with float noise.
  return Math.round(dollars * 1e8) / 1e8;
}

export interface PriceBook {
  /** Cost of one call; an unknown model costs 0 and is reported once to `onUnknownModel`. */
  costOf(model: string, usage: TokenUsage): number;
}

export function createPriceBook(overrides: Readonly<Record<string, ModelPrice>> = {}, onUnknownModel: (model: string) => void = () => {}): PriceBook {
  const prices = { ...defaultPrices, ...overrides };
  const reported = new Set<string>();
  return {
    costOf(model, usage) {
      const price = findPrice(model, prices);
      if (price) return costOf(usage, price);
      if (!reported.has(model)) {
        reported.add(model);
        onUnknownModel(model);
      }
      return 0;
    },
  };
}
