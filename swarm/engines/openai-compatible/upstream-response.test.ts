import { describe, expect, it } from "vitest";
import { chatCompletionResponseSchema, isPlainChatCompletion } from "./upstream-response.ts";

/**
 * The hand check of an upstream answer (the engine's hot path) against
 * chatCompletionResponseSchema (the rule): whatever the check accepts, zod accepts with an
 * equal output. Each field of a few answers (vLLM's with token ids, a plain OpenAI one) is
 * replaced, one at a time, by each value of a pool.
 */

const valid: Array<Record<string, unknown>> = [
  {
    id: "chatcmpl-1",
    object: "chat.completion",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "blue" },
        finish_reason: "stop",
        logprobs: { content: [{ token: "token_id:7", logprob: -0.1, bytes: null, top_logprobs: [] }] },
        token_ids: [7],
      },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 1 },
    prompt_token_ids: [1, 2, 3],
  },
  {
    choices: [
      { index: 0, message: { role: "assistant", content: null, tool_calls: [] }, finish_reason: null, logprobs: null, prompt_token_ids: [1] },
      { index: 1, message: { role: "assistant" }, logprobs: { content: null } },
    ],
    prompt_token_ids: null,
  },
];

const pool: unknown[] = [
  undefined,
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  "",
  "x",
  [],
  [1],
  [1.5],
  ["1"],
  [null],
  {},
  { content: "a" },
  { content: 1 },
  { token: "t", logprob: -1 },
  { token: 1, logprob: -1 },
  { token: "t", logprob: "x" },
  [{ message: {} }],
  [{ message: null }],
];

function* mutations(value: unknown, depth = 0): Generator<unknown> {
  if (depth > 5 || typeof value !== "object" || value === null) return;
  const entries = Array.isArray(value) ? value.map((item, index) => [index, item] as const) : Object.entries(value);
  for (const [key, item] of entries) {
    const replace = (next: unknown): unknown => {
      if (Array.isArray(value)) return value.map((old, index) => (index === key ? next : old));
      const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
      if (next === undefined) delete copy[key as string];
      else copy[key as string] = next;
      return copy;
    };
    for (const next of pool) yield replace(next);
    for (const inner of mutations(item, depth + 1)) yield replace(inner);
  }
}

describe("isPlainChatCompletion", () => {
  it("accepts the valid answers (so the hot path skips zod for them)", () => {
    for (const answer of valid) expect(isPlainChatCompletion(answer)).toBe(true);
  });

  it("never accepts an answer chatCompletionResponseSchema refuses, and its output equals zod's", () => {
    let accepted = 0;
    let refused = 0;
    for (const answer of [...valid, ...valid.flatMap((body) => [...mutations(body)]), null, [], "x", {}, { choices: [] }]) {
      const zod = chatCompletionResponseSchema.safeParse(answer);
      if (isPlainChatCompletion(answer)) {
        accepted += 1;
        expect(zod.success, JSON.stringify(answer)).toBe(true);
        expect(zod.data).toEqual(answer);
      } else if (!zod.success) refused += 1;
    }
    expect(accepted).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(50);
  });
});
