/**
 * One line of the cost ledger: one round trip to a model, successful or not. The campaign
 * ledger (campaign/) writes these as JSON lines; the shape is a contract, keep it flat.
 */
export interface LlmUsageRecord {
  /** ISO time the call ended. */
  time: string;
  kind: "llm";
  role: string;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  costUsd: number;
  durationMs: number;
  ok: boolean;
  /** core/errors.ts code when ok is false. */
  errorCode?: string;
}

/**
 * Where usage records go. A sink that throws makes the call fail: an unbooked call would
 * make budgets lie, which is worse than losing one answer.
 * Leaves out: batching, querying totals, persistence guarantees (the implementation's job).
 */
export interface LlmUsageSink {
  record(entry: LlmUsageRecord): Promise<void> | void;
}

/** Keeps records in memory, for tests and short-lived tools. */
export class InMemoryUsageSink implements LlmUsageSink {
  readonly records: LlmUsageRecord[] = [];

  record(entry: LlmUsageRecord): void {
    this.records.push({ ...entry });
  }

  totalCostUsd(): number {
    return this.records.reduce((sum, record) => sum + record.costUsd, 0);
  }
}
