import { describe, expect, it } from "vitest";
import { createWordTokenizer, endTokenId, roleTokenIds } from "./tokenizer.ts";

describe("word tokenizer", () => {
  const tokenizer = createWordTokenizer(["yes", "no", "?"]);

  it("renders each message as role + words + end, so spans tile the token list", () => {
    const encoded = tokenizer.encodeChat(
      [
        { role: "system", content: "Say yes" },
        { role: "user", content: "Yes? NO!" },
      ],
      { addGenerationPrompt: true },
    );
    expect(encoded.messageSpans).toEqual([
      { start: 0, end: 4 },
      { start: 4, end: 10 },
    ]);
    expect(encoded.tokenIds[0]).toBe(roleTokenIds.system);
    expect(encoded.tokenIds.slice(4)).toEqual([roleTokenIds.user, 5, 7, 6, encoded.tokenIds[8], endTokenId, roleTokenIds.assistant]);
  });

  it("gives words outside the vocabulary a stable id the policy cannot emit", () => {
    const [first] = tokenizer.encodeText("banana");
    expect(createWordTokenizer(["yes", "no", "?"]).encodeText("Banana")).toEqual([first]);
    expect(first).not.toBe(tokenizer.encodeText("cherry")[0]);
    expect(tokenizer.outputIndexOf(first!)).toBe(-1);
    expect(tokenizer.decode([5, first!, 6, endTokenId])).toBe("yes <unk> no");
  });

  it("maps output indexes to end-of-turn then the vocabulary, and round-trips vocabulary text", () => {
    expect(tokenizer.outputTokenIds).toEqual([endTokenId, 5, 6, 7]);
    expect(tokenizer.outputIndexOf(endTokenId)).toBe(0);
    expect(tokenizer.outputIndexOf(6)).toBe(2);
    expect(tokenizer.encodeText(tokenizer.decode([5, 7, 6]))).toEqual([5, 7, 6]);
  });

  it("rejects vocabulary entries that are not single lower-case words", () => {
    expect(() => createWordTokenizer(["Yes"])).toThrow(/one lower-case word/);
    expect(() => createWordTokenizer(["two words"])).toThrow(/one lower-case word/);
  });
});
