import { describe, expect, it } from "vitest";
import { chatRequestSchema, isPlainChatRequest } from "./chat-completions.ts";

/**
 * The hand check (the gateway's hot path) against chatRequestSchema (the rule): a body the
 * check accepts must be one zod accepts, with zod's output equal to the body itself. Every
 * field of a few valid bodies is replaced, one at a time, by each value of a pool of wrong,
 * borderline and valid values, so a constraint the check forgets shows up as a disagreement.
 */

const valid: Array<Record<string, unknown>> = [
  { model: "stub", messages: [{ role: "user", content: "hi" }] },
  {
    model: "m",
    messages: [
      { role: "system", content: "You name colours." },
      {
        role: "developer",
        content: [
          { type: "text", text: "be brief" },
          { type: "image_url", image_url: { url: "x" } },
        ],
      },
      { role: "user", content: "What colour is the sky?", name: "ann" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "look", arguments: "{}" } }] },
      { role: "tool", content: "blue", tool_call_id: "call_1" },
      { role: "assistant", content: "blue", tool_calls: null, refusal: null },
    ],
    stream: true,
    stream_options: { include_usage: true },
    temperature: 0.7,
    top_p: 1,
    max_tokens: 16,
    max_completion_tokens: null,
    stop: ["\n"],
    seed: 3,
    tools: [{ type: "function", function: { name: "look", parameters: {} } }],
    n: 1,
    user: "someone",
    logprobs: false,
  },
];

const pool: unknown[] = [
  undefined,
  null,
  true,
  false,
  0,
  -1,
  1,
  0.5,
  1.5,
  2,
  2.5,
  3,
  2 ** 53,
  Number.POSITIVE_INFINITY,
  Number.NaN,
  "",
  "x",
  "user",
  "assistant",
  "bogus",
  [],
  ["x"],
  [1],
  [null],
  {},
  { type: "text" },
  { type: "text", text: 1 },
  { include_usage: "yes" },
  { name: "f" },
  { function: { name: "f" } },
  { function: { name: 1 } },
  [{ role: "user", content: "hi" }],
  [{ role: "robot", content: "hi" }],
  [{ type: "text", text: "a" }],
  [{ function: { name: "f", arguments: 1 } }],
];

/** Every body with one value (at any depth, arrays included) replaced by each pool value, or removed. */
function* mutations(value: unknown, depth = 0): Generator<unknown> {
  if (depth > 4 || typeof value !== "object" || value === null) return;
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

describe("isPlainChatRequest", () => {
  it("accepts the valid bodies (so the hot path skips zod for them)", () => {
    for (const body of valid) expect(isPlainChatRequest(body)).toBe(true);
  });

  it("never accepts a body chatRequestSchema refuses, and its output equals zod's", () => {
    let accepted = 0;
    let refused = 0;
    const bodies: unknown[] = [...valid, ...valid.flatMap((body) => [...mutations(body)]), null, [], "x", 1, {}];
    for (const body of bodies) {
      const zod = chatRequestSchema.safeParse(body);
      if (isPlainChatRequest(body)) {
        accepted += 1;
        expect(zod.success, JSON.stringify(body)).toBe(true);
        expect(zod.data).toEqual(body);
      } else if (!zod.success) refused += 1;
    }
    // Both sides of the comparison are exercised.
    expect(accepted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });

  it("leaves a body with an own __proto__ key to zod (which drops that key)", () => {
    const body = JSON.parse('{"__proto__": {"x": 1}, "messages": [{"role": "user", "content": "hi"}]}') as unknown;
    expect(isPlainChatRequest(body)).toBe(false);
    expect(chatRequestSchema.safeParse(body).success).toBe(true);
  });
});
