import { describe, expect, it } from "vitest";
import { z } from "zod";
import { checkAnswer, parseJsonAnswer, repairPrompt } from "./answer-check.ts";
import { outputSpecification } from "./model-schema.ts";

const schema = z.object({ verdict: z.enum(["confirmed", "refuted"]), confidence: z.number().min(0).max(1) });
const output = outputSpecification(schema, "verdict");
const response = (text: string, structured?: unknown) => ({
  text,
  ...(structured === undefined ? {} : { structured }),
  toolCalls: [],
  usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 },
  model: "m",
});

describe("answer check", () => {
  it("reads JSON from text, also inside a markdown fence", () => {
    expect(parseJsonAnswer('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonAnswer('```json\n{"a":1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonAnswer("sure! here it is")).toMatchObject({ ok: false, issue: expect.stringContaining("not valid JSON") });
    expect(parseJsonAnswer("  ")).toMatchObject({ ok: false, issue: expect.stringContaining("empty") });
  });

  it("prefers the structured channel over the text", () => {
    expect(checkAnswer(response("ignored", { verdict: "confirmed", confidence: 0.9 }), output, schema)).toEqual({
      ok: true,
      value: { verdict: "confirmed", confidence: 0.9 },
    });
  });

  it("lists every issue with its path, and keeps the answer for the repair round", () => {
    const check = checkAnswer(response('{"verdict":"maybe","confidence":3}'), output, schema);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.issues).toHaveLength(2);
    expect(check.issues[0]).toMatch(/^verdict: /);
    expect(check.issues[1]).toMatch(/^confidence: /);
    expect(check.answerText).toBe('{"verdict":"maybe","confidence":3}');
    const prompt = repairPrompt(output, check.issues);
    expect(prompt).toContain('"verdict"');
    expect(prompt).toContain(check.issues[1]);
    expect(prompt).toContain('"enum":["confirmed","refuted"]');
  });
});
