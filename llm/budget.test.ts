import { describe, expect, it } from "vitest";
import { summarizeLedger, type LedgerEntry } from "../campaign/ledger.ts";
import { isA3rError, type A3rError } from "../core/errors.ts";
import { renderSpendingByRole } from "../campaign/llm-spending.ts";
import { estimateCall, withBudget, type LlmSpending } from "./budget.ts";
import { createPriceBook } from "./prices.ts";
import { createScriptedChatModel, InMemoryUsageSink, type ScriptedChatModel } from "./index.ts";

/** Spending as the sink saw it, the way the campaign ledger would total it. */
function spentFrom(sink: InMemoryUsageSink, earlier: LlmSpending = { tokens: 0, usd: 0 }): () => LlmSpending {
  return () => ({
    tokens: earlier.tokens + sink.records.reduce((sum, record) => sum + record.inputTokens + record.outputTokens, 0),
    usd: earlier.usd + sink.totalCostUsd(),
  });
}

async function refusal(promise: Promise<unknown>): Promise<A3rError> {
  try {
    await promise;
  } catch (error) {
    if (isA3rError(error, "LLM_BUDGET_EXCEEDED")) return error;
    throw error;
  }
  throw new Error("the call was not refused");
}

const ask = (content: string, maxTokens = 100) => ({ role: "plan" as const, messages: [{ role: "user" as const, content }], maxTokens });

describe("withBudget", () => {
  it("lets calls through while the estimate fits, then refuses before sending anything", async () => {
    const sink = new InMemoryUsageSink();
    const model = createScriptedChatModel([{ text: "a", usage: { inputTokens: 300, outputTokens: 100 } }, { text: "b" }], { sink });
    const budgeted = withBudget(model, { limit: { tokens: 1000 }, spent: spentFrom(sink, { tokens: 200, usd: 0 }) });

    // 200 spent + (8 characters / 4 + 100) estimated = 302: fits.
    expect((await budgeted.complete(ask("12345678"))).text).toBe("a");
    expect(sink.records).toHaveLength(1);

    // 200 + 400 booked = 600 spent; this call may take 2 + 500: over 1,000.
    const error = await refusal(budgeted.complete(ask("12345678", 500)));
    expect(error.message).toBe(
      "language-model budget budgets.llm_tokens would be exceeded: 600 tokens spent, and this plan call may take up to 502 more, over the budget of 1,000 tokens; the call was not sent",
    );
    expect(error.where).toBe("budgets.llm_tokens");
    expect(error.hint).toMatch(/Raise `budgets\.llm_tokens` in the topic's front matter/);
    expect(model.requests).toHaveLength(1);
    expect(sink.records).toHaveLength(1);
    expect(model.remainingSteps()).toBe(1);
  });

  it("refuses by dollars with the model's prices, naming budgets.llm_usd", async () => {
    const sink = new InMemoryUsageSink();
    const model = createScriptedChatModel([{ text: "never" }], { sink }, { model: "claude-sonnet-4-6" });
    // 1,000 output tokens at $15 per million = $0.015; $0.99 spent leaves $0.01.
    const budgeted = withBudget(model, { limit: { tokens: 1e9, usd: 1 }, spent: () => ({ tokens: 0, usd: 0.99 }) });
    const error = await refusal(budgeted.complete(ask("hi", 1000)));
    expect(error.message).toMatch(
      /^language-model budget budgets\.llm_usd would be exceeded: \$0\.9900 spent, and this plan call may cost up to \$0\.0150 more, over the budget of \$1\.00;/,
    );
    expect(error.where).toBe("budgets.llm_usd");
    expect(error.hint).toMatch(/budgets\.llm_usd/);
    expect(model.requests).toHaveLength(0);
  });

  it("estimates with the model config's own prices, so a model the built-in list lacks is not free", async () => {
    const sink = new InMemoryUsageSink();
    // A local model priced only in its config: $100 per million output tokens.
    const model = createScriptedChatModel(
      [{ text: "never" }],
      { sink },
      { model: "lab-llama-70b", prices: { "lab-llama-70b": { input: 50, output: 100, cachedInput: 5 } } },
    );
    const budgeted = withBudget(model, { limit: { usd: 0.05 }, spent: () => ({ tokens: 0, usd: 0 }) });
    const error = await refusal(budgeted.complete(ask("hi", 1000)));
    expect(error.message).toMatch(/this plan call may cost up to \$0\.1\d+ more, over the budget of \$0\.05/);
    expect(model.requests).toHaveLength(0);
  });

  it("counts calls still in flight, so concurrent calls cannot pass the limit together", async () => {
    const sink = new InMemoryUsageSink();
    const model = createScriptedChatModel([{ text: "slow", delayMs: 200 }, { text: "second" }], { sink });
    const budgeted = withBudget(model, { limit: { tokens: 150 }, spent: spentFrom(sink) });
    // Not awaited: the first call is in flight (its reservation made) when the second asks.
    const first = budgeted.complete(ask("x", 100));
    const error = await refusal(budgeted.complete(ask("y", 100)));
    expect(error.message).toContain("101 tokens spent");
    expect((await first).text).toBe("slow");
  });

  it("asks for the spending before every call, so spending elsewhere (a worker, an earlier run) counts", async () => {
    let elsewhere = 0;
    const model: ScriptedChatModel = createScriptedChatModel([{ text: "one" }, { text: "two" }], { sink: new InMemoryUsageSink() });
    const budgeted = withBudget(model, {
      limit: { tokens: 1000 },
      spent: async () => ({ tokens: elsewhere, usd: 0 }),
      names: { tokens: "the token budget", usd: "the dollar budget" },
      hint: "Give it more.",
    });
    await budgeted.complete(ask("a"));
    elsewhere = 950;
    const error = await refusal(budgeted.complete(ask("a")));
    expect(error.message).toMatch(/^language-model budget the token budget would be exceeded: 950 tokens spent/);
    expect(error.hint).toBe("Give it more.");
  });

  it("returns the model itself without limits, and refuses a limit that is not a positive number", () => {
    const model = createScriptedChatModel([], { sink: new InMemoryUsageSink() });
    expect(withBudget(model, { limit: {}, spent: () => ({ tokens: 0, usd: 0 }) })).toBe(model);
    expect(() => withBudget(model, { limit: { tokens: 0 }, spent: () => ({ tokens: 0, usd: 0 }) })).toThrow(/tokens limit .* positive number, got 0/);
    expect(() => withBudget(model, { limit: { usd: Number.NaN }, spent: () => ({ tokens: 0, usd: 0 }) })).toThrow(/usd limit/);
  });
});

describe("estimateCall", () => {
  it("counts system, messages and tool descriptions at four characters a token, plus all of maxTokens", () => {
    const priceBook = createPriceBook();
    const estimate = estimateCall(
      {
        system: "s".repeat(40),
        messages: [{ role: "user", content: "u".repeat(41) }],
        maxTokens: 1000,
        tools: [{ name: "abcd", description: "efgh", inputSchema: undefined as never }],
      },
      "gpt-4.1",
      priceBook,
    );
    // ceil((40 + 41 + 8) / 4) = 23 input tokens; gpt-4.1 is $2 in, $8 out per million.
    expect(estimate).toEqual({ tokens: 1023, usd: (23 * 2 + 1000 * 8) / 1e6 });
    expect(estimateCall({ messages: [{ role: "user", content: "x" }], maxTokens: 10 }, "my-local-model", priceBook).usd).toBe(0);
  });
});

describe("renderSpendingByRole", () => {
  const call = (role: string, inputTokens: number, outputTokens: number, costUsd: number, ok = true): LedgerEntry => ({
    time: "2026-01-01T00:00:00.000Z",
    kind: "llm",
    role,
    provider: "anthropic",
    model: "claude-sonnet-4-6",
    inputTokens,
    outputTokens,
    cachedTokens: 0,
    costUsd,
    durationMs: 10,
    ok,
    ...(ok ? {} : { errorCode: "LLM_OUTPUT_INVALID" }),
  });

  it("lists the roles that were used, in campaign order, other roles by name, then the total", () => {
    const summary = summarizeLedger([
      call("analyze", 2000, 500, 0.0135),
      call("plan", 1000, 200, 0.006),
      call("plan", 1200, 300, 0.0081, false),
      call("zeta", 10, 10, 0),
      call("diagnose", 900, 40, 1.5),
      { time: "2026-01-01T00:00:00.000Z", kind: "gpu", blueprintId: "b", host: "h", gpus: 1, hours: 2 },
    ]);
    expect(renderSpendingByRole(summary)).toBe(
      [
        "| role | calls | tokens | USD |",
        "| --- | ---: | ---: | ---: |",
        "| plan | 2 (1 failed) | 2,700 | $0.0141 |",
        "| analyze | 1 | 2,500 | $0.0135 |",
        "| diagnose | 1 | 940 | $1.50 |",
        "| zeta | 1 | 20 | $0.0000 |",
        "| **total** | 5 (1 failed) | 6,160 | $1.53 |",
      ].join("\n"),
    );
  });

  it("says so when nothing was spent", () => {
    expect(renderSpendingByRole(summarizeLedger([]))).toBe("No language-model calls yet.");
  });
});
