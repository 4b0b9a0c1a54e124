import { describe, expect, it } from "vitest";
import { contextFromModelList, estimateTokens, parseTokenCount } from "./context-window.ts";

describe("context window", () => {
  it("reads vLLM's max_model_len for the served model, llama.cpp's n_ctx_train, and nothing from a list that states none", () => {
    const list = {
      data: [
        { id: "other", max_model_len: 1 },
        { id: "tiny-qwen", max_model_len: 1024 },
      ],
    };
    expect(contextFromModelList(list, "tiny-qwen")).toBe(1024);
    expect(contextFromModelList({ data: [{ id: "x", meta: { n_ctx_train: 4096 } }] }, "served-as-other")).toBe(4096);
    expect(contextFromModelList({ data: [{ id: "gpt-4.1" }] }, "gpt-4.1")).toBeUndefined();
    expect(contextFromModelList("not a list", "m")).toBeUndefined();
  });

  it("parses A3R_LLM_CONTEXT as tokens, k meaning 1024, and refuses anything else", () => {
    expect(parseTokenCount("8192")).toBe(8192);
    expect(parseTokenCount("32k")).toBe(32_768);
    expect(parseTokenCount("8 K")).toBe(8192);
    expect(parseTokenCount("8000 tokens")).toBeUndefined();
    expect(parseTokenCount("0")).toBeUndefined();
  });

  it("estimates high: one token per 3 characters", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abcd")).toBe(2);
  });
});
