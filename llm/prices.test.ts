import { describe, expect, it } from "vitest";
import { costOf, createPriceBook, findPrice } from "./prices.ts";

describe("prices", () => {
  it("finds the longest matching prefix, so a dated snapshot or a mini model gets its own price", () => {
    expect(
      findPrice("gpt-4o-mini-2024-07-18", {
        "gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
        "gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
      }),
    ).toEqual({
      input: 0.15,
      output: 0.6,
      cachedInput: 0.075,
    });
    expect(findPrice("llama-3", { "gpt-4o": { input: 1, output: 1, cachedInput: 1 } })).toBeUndefined();
  });

  it("charges cached input at the cached price and the rest at the input price", () => {
    // 20 uncached * $3 + 100 cached * $0.3 + 30 output * $15, per million.
    expect(costOf({ inputTokens: 120, cachedTokens: 100, outputTokens: 30 }, { input: 3, output: 15, cachedInput: 0.3 })).toBeCloseTo(0.00054, 12);
  });

  it("books an unknown model at $0 and reports it once; overrides win over the table", () => {
    const unknown: string[] = [];
    const book = createPriceBook({ "my-local-model": { input: 1, output: 2, cachedInput: 0 } }, (model) => unknown.push(model));
    const usage = { inputTokens: 1_000_000, outputTokens: 1_000_000, cachedTokens: 0 };
    expect(book.costOf("mystery-7b", usage)).toBe(0);
    expect(book.costOf("mystery-7b", usage)).toBe(0);
    expect(unknown).toEqual(["mystery-7b"]);
    expect(book.costOf("my-local-model-q4", usage)).toBe(3);
    expect(book.costOf("claude-sonnet-4-6", usage)).toBe(18);
  });
});
