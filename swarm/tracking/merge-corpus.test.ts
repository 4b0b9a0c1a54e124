import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../engines/port/engine.ts";
import { createWordTokenizer } from "../engines/embedded/tokenizer.ts";
import {
  buildTrainingSamples,
  extendsCall,
  identicalCalls,
  mergeTimelines,
  type CompareLevel,
  type MergeOptions,
  type RecordedCall,
  type Timeline,
} from "./index.ts";

/**
 * The merge corpus: the cases MERGE.md names, then a generated mix of episodes (retries,
 * identical and different answers, branches, stripped whitespace, edited history, outputs
 * replayed in the wrong role, tool and agent changes) checked against the specification:
 * an independent brute-force reading of its three rules, and the properties every result
 * must have.
 */
const words = ["yes", "no", "a", "b", "c", "d", "e", "f"];
const tokenizer = createWordTokenizer(words);
const endToken = 4;
const levels: CompareLevel[] = ["text", "token"];

interface CallSpec {
  messages: ChatMessage[];
  output: string;
  agentName?: string;
  tools?: unknown[];
  /** Completion ids other than the canonical encoding of `output` (a non-canonical sample). */
  completionTokenIds?: number[];
}

function recorded(specs: CallSpec[]): RecordedCall[] {
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

const S: ChatMessage = { role: "system", content: "a" };
const U: ChatMessage = { role: "user", content: "b" };
const A = (content: string): ChatMessage => ({ role: "assistant", content });
const user = (content: string): ChatMessage => ({ role: "user", content });
const search = [{ type: "function", function: { name: "search", parameters: { type: "object", properties: {} } } }];
const browse = [{ type: "function", function: { name: "browse" } }];

/** Timelines as sorted call-index sets, duplicates included, for comparison. */
function shape(timelines: Timeline[]): number[][] {
  return timelines.map((timeline) => [...timeline.calls, ...timeline.duplicates].map((call) => call.callIndex).sort((x, y) => x - y));
}

interface NamedCase {
  name: string;
  calls: CallSpec[];
  expected: number[][];
  /** Where the levels (or ignoreTools) disagree. */
  expectedAt?: Partial<Record<CompareLevel | "ignoreTools", number[][]>>;
}

const namedCases: NamedCase[] = [
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

describe("merge corpus: the cases of MERGE.md", () => {
  for (const testCase of namedCases) {
    for (const compareLevel of levels) {
      it(`${testCase.name} (${compareLevel})`, () => {
        const calls = recorded(testCase.calls);
        expect(shape(mergeTimelines(calls, compareLevel))).toEqual(testCase.expectedAt?.[compareLevel] ?? testCase.expected);
        const withoutToolCheck = shape(mergeTimelines(calls, { compareLevel, ignoreTools: true }));
        expect(withoutToolCheck).toEqual(testCase.expectedAt?.ignoreTools ?? testCase.expectedAt?.[compareLevel] ?? testCase.expected);
        checkProperties(calls, { compareLevel });
      });
    }
  }

  it("a duplicate adds no loss: the sample of 0,1(=0),2 trains x and y once each", () => {
    const calls = recorded(namedCases[0]!.calls);
    const { samples } = buildTrainingSamples(calls, { compareLevel: "token", taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat });
    expect(samples).toHaveLength(1);
    expect(samples[0]!.tokenIds).toEqual([...calls[2]!.promptTokenIds, ...calls[2]!.completionTokenIds]);
    expect(samples[0]!.lossMask.reduce((sum, bit) => sum + bit, 0)).toBe(calls[0]!.completionTokenIds.length + calls[2]!.completionTokenIds.length);
  });
});

// ---- the specification, read by brute force ----------------------------------------------

function replayLength(call: RecordedCall, compareLevel: CompareLevel): number {
  return compareLevel === "text" ? call.messages.length : call.promptTokenIds.length + call.completionTokenIds.length;
}

/** Rules 1-3 of MERGE.md, every pair compared, no fingerprints: timelines as index sets. */
function expectedBySpecification(calls: RecordedCall[], options: MergeOptions): number[][] {
  const representativeOf = new Map<RecordedCall, RecordedCall>();
  const representatives: RecordedCall[] = [];
  for (const call of calls) {
    const twin = representatives.find((candidate) => identicalCalls(call, candidate, options));
    representativeOf.set(call, twin ?? call);
    if (!twin) representatives.push(call);
  }
  const parentOf = new Map<RecordedCall, RecordedCall>();
  for (const call of representatives) {
    let parent: RecordedCall | undefined;
    for (const earlier of representatives) {
      if (!extendsCall(call, earlier, options)) continue;
      const longer = !parent || replayLength(earlier, options.compareLevel) > replayLength(parent, options.compareLevel);
      const asLongButLater =
        parent && replayLength(earlier, options.compareLevel) === replayLength(parent, options.compareLevel) && earlier.callIndex > parent.callIndex;
      if (longer || asLongButLater) parent = earlier;
    }
    if (parent) parentOf.set(call, parent);
  }
  const latestDescendant = new Map<RecordedCall, RecordedCall>(representatives.map((call) => [call, call]));
  for (const call of representatives) {
    for (let ancestor = parentOf.get(call); ancestor; ancestor = parentOf.get(ancestor)) {
      if (latestDescendant.get(ancestor)!.callIndex < call.callIndex) latestDescendant.set(ancestor, call);
    }
  }
  const groups = new Map<RecordedCall, number[]>();
  for (const call of calls) {
    const leaf = latestDescendant.get(representativeOf.get(call)!)!;
    groups.set(leaf, [...(groups.get(leaf) ?? []), call.callIndex]);
  }
  return [...groups.values()].map((group) => group.sort((x, y) => x - y)).sort((x, y) => x[0]! - y[0]!);
}

/** What every merge result must satisfy, whatever the input. */
function checkProperties(calls: RecordedCall[], options: MergeOptions): Timeline[] {
  const timelines = mergeTimelines(calls, options);
  // Every call in exactly one timeline.
  const seen = shape(timelines).flat();
  expect(seen.sort((x, y) => x - y)).toEqual(calls.map((call) => call.callIndex));
  const members = timelines.flatMap((timeline) => timeline.calls);
  for (const timeline of timelines) {
    expect(timeline.calls.length).toBeGreaterThan(0);
    // A prefix chain: each call replays the one before it.
    for (let index = 1; index < timeline.calls.length; index++) {
      expect(extendsCall(timeline.calls[index]!, timeline.calls[index - 1]!, options)).toBe(true);
    }
    // A duplicate has an earlier identical twin in its own timeline.
    for (const duplicate of timeline.duplicates) {
      expect(timeline.calls.some((call) => call.callIndex < duplicate.callIndex && identicalCalls(duplicate, call, options))).toBe(true);
    }
  }
  // Deduplication is complete: no two trained calls are identical.
  for (let i = 0; i < members.length; i++) {
    for (let j = i + 1; j < members.length; j++) expect(identicalCalls(members[i]!, members[j]!, options)).toBe(false);
  }
  // The timelines are exactly those the specification gives.
  expect(shape(timelines)).toEqual(expectedBySpecification(calls, options));

  // Samples: one per timeline, the loss on exactly the trained calls' completions.
  const { samples } = buildTrainingSamples(calls, { ...options, taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat });
  expect(samples).toHaveLength(timelines.length);
  timelines.forEach((timeline, index) => {
    const sample = samples[index]!;
    const generated = timeline.calls.reduce((sum, call) => sum + call.completionTokenIds.length, 0);
    expect(sample.lossMask.reduce((sum, bit) => sum + bit, 0)).toBe(generated);
    const last = timeline.calls[timeline.calls.length - 1]!;
    if (options.compareLevel === "token") expect(sample.tokenIds).toEqual([...last.promptTokenIds, ...last.completionTokenIds]);
  });
  return timelines;
}

// ---- the generated mix --------------------------------------------------------------------

function random(seed: number): () => number {
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
function generatedEpisode(seed: number, count: number): CallSpec[] {
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

describe("merge corpus: a generated mix checked against the specification", () => {
  const episodes = Array.from({ length: 150 }, (_, seed) => recorded(generatedEpisode(seed + 1, 3 + (seed % 12))));

  for (const compareLevel of levels) {
    for (const ignoreTools of [false, true]) {
      it(`${episodes.length} episodes, ${compareLevel} level${ignoreTools ? ", ignoreTools" : ""}`, () => {
        let duplicates = 0;
        let merged = 0;
        for (const calls of episodes) {
          const timelines = checkProperties(calls, { compareLevel, ignoreTools });
          duplicates += timelines.reduce((sum, timeline) => sum + timeline.duplicates.length, 0);
          merged += calls.length - timelines.length;
        }
        // The mix really exercises the rule: retries were deduplicated and turns merged.
        expect(duplicates).toBeGreaterThan(20);
        expect(merged).toBeGreaterThan(duplicates);
      });
    }
  }

  it("hands calls in any order and gets the same timelines", () => {
    for (const calls of episodes.slice(0, 30)) {
      const shuffled = [...calls].reverse();
      for (const compareLevel of levels) expect(shape(mergeTimelines(shuffled, compareLevel))).toEqual(shape(mergeTimelines(calls, compareLevel)));
    }
  });
});
