/** Tokens one model call used, as every provider reports them (prices.ts turns them into dollars). */
export interface TokenUsage {
  /** All input tokens, cached ones included (so inputTokens >= cachedTokens). */
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache. */
  cachedTokens: number;
}
