import type { ChatMessage } from "../engines/port/engine.ts";
import { createWordTokenizer } from "../engines/embedded/tokenizer.ts";
import type { CompareLevel, RecordedCall, Timeline } from "./index.ts";

/**
 * The merge corpus's material, shared by merge-corpus.test.ts (a3r's rule against its
 * specification) and agentjet-compat.test.ts (the compat switch against AgentJet's rule):
 * a word tokenizer, call specs turned into recorded calls, and a generated mix of episodes
 * (retries, identical and different answers, branches, stripped whitespace, edited history,
 * outputs replayed in the wrong role, tool and agent changes).
 */
export const words = ["yes", "no", "a", "b", "c", "d", "e", "f"];
export const tokenizer = createWordTokenizer(words);
export const endToken = 4;
export const levels: CompareLevel[] = ["text", "token"];

export interface CallSpec {
  messages: ChatMessage[];
  output: string;
  agentName?: string;
  tools?: unknown[];
  /** Completion ids other than the canonical encoding of `output` (a non-canonical sample). */
  completionTokenIds?: number[];
}

export function recorded(specs: CallSpec[]): RecordedCall[] {
  return specs.map((spec, callIndex) => {
    const completionTokenIds = spec.completionTokenIds ?? [...tokenizer.encodeText(spec.output), endToken];
    return {
      callIndex,
      ...(spec.agentName ? { agentName: spec.agentName } : {}),
      ...(spec.tools ? { tools: spec.tools } : {}),
      messages: spec.messages,
      promptTokenIds: tokenizer.encodeChat(spec.messages, { addGenerationPrompt: true }).tokenIds,
      completionTokenIds,
      completionText: spec.output,
      completionLogprobs: completionTokenIds.map(() => -0.5),
      time: callIndex,
    };
  });
}

export const S: ChatMessage = { role: "system", content: "a" };
export const U: ChatMessage = { role: "user", content: "b" };
export const A = (content: string): ChatMessage => ({ role: "assistant", content });
export const user = (content: string): ChatMessage => ({ role: "user", content });
export const search = [{ type: "function", function: { name: "search", parameters: { type: "object", properties: {} } } }];
export const browse = [{ type: "function", function: { name: "browse" } }];

/** Timelines as sorted call-index sets, duplicates included, for comparison. */
export function shape(timelines: Timeline[]): number[][] {
  return timelines.map((timeline) => [...timeline.calls, ...timeline.duplicates].map((call) => call.callIndex).sort((x, y) => x - y));
}

export interface NamedCase {
  name: string;
  calls: CallSpec[];
  expected: number[][];
  /** Where the levels (or ignoreTools) disagree. */
  expectedAt?: Partial<Record<CompareLevel | "ignoreTools", number[][]>>;
}

export const namedCases: NamedCase[] = [
  {
    name: "identical repeated calls are one call: 0:[S,U]->x, 1:[S,U]->x, 2:[S,U,A(x),U2]->y",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U], output: "yes" },
      { messages: [S, U, A("yes"), user("c")], output: "no" },
    ],
    expected: [[0, 1, 2]],
  },
  {
    name: "the latest extension absorbs the ancestor: 0->x, 1:[..,A(x),U2], 2:[..,A(x),U3]",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U, A("yes"), user("c")], output: "no" },
      { messages: [S, U, A("yes"), user("d")], output: "no" },
    ],
    expected: [[0, 2], [1]],
  },
  {
    name: "an abandoned branch does not cut the trajectory the episode finished on",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U, A("yes"), user("c")], output: "no" },
      { messages: [S, U, A("yes"), user("d")], output: "a" },
      { messages: [S, U, A("yes"), user("c"), A("no"), user("e")], output: "b" },
    ],
    expected: [[0, 1, 3], [2]],
  },
  {
    name: "a retry with another answer stays its own timeline",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U], output: "no" },
      { messages: [S, U, A("yes"), user("c")], output: "a" },
    ],
    expected: [[0, 2], [1]],
  },
  {
    name: "identical calls with no continuation are trained once",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U], output: "yes" },
      { messages: [S, U], output: "yes" },
    ],
    expected: [[0, 1, 2]],
  },
  {
    name: "a duplicate in the middle of a chain stays in it",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U, A("yes"), user("c")], output: "no" },
      { messages: [S, U, A("yes"), user("c")], output: "no" },
      { messages: [S, U, A("yes"), user("c"), A("no"), user("d")], output: "a" },
    ],
    expected: [[0, 1, 2, 3]],
  },
  {
    name: "role-checked: an output that comes back as a user message is not the policy's turn",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U, user("yes"), user("c")], output: "no" },
    ],
    expected: [[0], [1]],
  },
  {
    name: "whitespace the client stripped from the replayed answer still merges",
    calls: [
      { messages: [S, U], output: " yes\n" },
      { messages: [S, U, A("yes"), user("c")], output: "no" },
    ],
    expected: [[0, 1]],
  },
  {
    name: "edited history is context, not a replay",
    calls: [
      { messages: [S, U], output: "yes" },
      { messages: [S, U, A("no"), user("c")], output: "a" },
    ],
    expected: [[0], [1]],
  },
  {
    name: "a changed tool list refuses to merge unless ignoreTools (key order does not count as a change)",
    calls: [
      { messages: [S, U], output: "yes", tools: search },
      { messages: [S, U, A("yes"), user("c")], output: "no", tools: browse },
      {
        messages: [S, U, A("yes"), user("c"), A("no"), user("d")],
        output: "a",
        tools: JSON.parse(JSON.stringify(browse).replace('{"type":"function","function"', '{"function"').replace("}}]", '},"type":"function"}]')),
      },
    ],
    expected: [[0], [1, 2]],
    expectedAt: { ignoreTools: [[0, 1, 2]] },
  },
  {
    name: "agents with their own system prompts never merge",
    calls: [
      { messages: [S, U], output: "yes", agentName: "planner" },
      { messages: [{ role: "system", content: "c" }, U], output: "no", agentName: "critic" },
      { messages: [S, U, A("yes"), user("d")], output: "a", agentName: "planner" },
      { messages: [{ role: "system", content: "c" }, U, A("no"), user("e")], output: "b", agentName: "critic" },
    ],
    expected: [
      [0, 2],
      [1, 3],
    ],
  },
  {
    name: "a critic whose prompt is the planner's exact conversation carries the planner's turn",
    calls: [
      { messages: [S, U], output: "yes", agentName: "planner" },
      { messages: [S, U, A("yes"), user("review")], output: "no", agentName: "critic" },
    ],
    expected: [[0, 1]],
  },
  {
    name: "across agents, equal text is not enough: the tokens the policy produced must be in the prompt",
    calls: [
      { messages: [S, U], output: "yes", agentName: "planner", completionTokenIds: [123456, endToken] },
      { messages: [S, U, A("yes"), user("c")], output: "no", agentName: "critic" },
      { messages: [S, U, A("yes"), user("d")], output: "no", agentName: "planner" },
    ],
    expected: [[0], [1], [2]],
    expectedAt: { text: [[0, 2], [1]] },
  },
  {
    name: "identical calls of two agents are not duplicates",
    calls: [
      { messages: [S, U], output: "yes", agentName: "planner" },
      { messages: [S, U], output: "yes", agentName: "critic" },
    ],
    expected: [[0], [1]],
  },
];

export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Context {
  messages: ChatMessage[];
  agentName?: string;
  tools?: unknown[];
}

/** One episode of `count` calls, mostly a main trajectory, with every disturbance the rule names. */
export function generatedEpisode(seed: number, count: number): CallSpec[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const phrase = () => Array.from({ length: 1 + Math.floor(next() * 2) }, () => pick(words)).join(" ");
  const contexts: Context[] = [{ messages: [{ role: "system", content: pick(words) }, user(phrase())] }];
  const specs: CallSpec[] = [];
  while (specs.length < count) {
    const roll = next();
    if (roll < 0.12 && specs.length > 0) {
      specs.push({ ...pick(specs) }); // an identical retry
      continue;
    }
    const context = roll < 0.6 ? contexts[contexts.length - 1]! : pick(contexts);
    const output = phrase();
    const spec: CallSpec = {
      messages: context.messages,
      output: next() < 0.1 ? ` ${output}\n` : output,
      ...(context.agentName ? { agentName: context.agentName } : {}),
      ...(context.tools ? { tools: context.tools } : {}),
      ...(next() < 0.08 ? { completionTokenIds: [100000 + Math.floor(next() * 4), endToken] } : {}),
    };
    specs.push(spec);
    if (next() < 0.1) continue; // a retry that gets another answer will follow from the same context
    const replay = next();
    const replayed = replay < 0.8 ? A(output) : replay < 0.9 ? A(phrase()) : user(output);
    const messages = [...context.messages, replayed, next() < 0.5 ? user(phrase()) : { role: "tool" as const, content: phrase() }];
    if (next() < 0.05) messages[1] = user(phrase()); // an earlier user message rewritten
    const change = next();
    const tools = change < 0.1 ? pick([search, browse, undefined]) : context.tools;
    const agentName = change > 0.9 ? pick(["planner", "critic", undefined]) : context.agentName;
    contexts.push({ messages, ...(agentName ? { agentName } : {}), ...(tools ? { tools } : {}) });
  }
  return specs;
}
