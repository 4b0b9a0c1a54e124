import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../engines/port/engine.ts";
import { createWordTokenizer } from "../engines/embedded/tokenizer.ts";
import { buildTrainingSamples, mergeTimelines, type CompareLevel, type RecordedCall } from "./index.ts";

// Ids: system 0, user 1, assistant 2, tool 3, end 4, yes 5, no 6, a 7, b 8, c 9.
const tokenizer = createWordTokenizer(["yes", "no", "a", "b", "c"]);
const S = 0,
  U = 1,
  A = 2,
  T = 3,
  E = 4,
  yes = 5,
  no = 6,
  a = 7,
  b = 8,
  c = 9;

let nextIndex = 0;
function call(messages: ChatMessage[], completionText: string, options: { agentName?: string; finishedByLength?: boolean } = {}): RecordedCall {
  const completionTokenIds = tokenizer.encodeText(completionText);
  if (!options.finishedByLength) completionTokenIds.push(E);
  return {
    callIndex: nextIndex++,
    ...(options.agentName ? { agentName: options.agentName } : {}),
    messages,
    promptTokenIds: tokenizer.encodeChat(messages, { addGenerationPrompt: true }).tokenIds,
    completionTokenIds,
    completionText,
    completionLogprobs: completionTokenIds.map((_, index) => -0.1 * (index + 1)),
    time: 0,
  };
}
const sys = (content: string): ChatMessage => ({ role: "system", content });
const user = (content: string): ChatMessage => ({ role: "user", content });
const assistant = (content: string): ChatMessage => ({ role: "assistant", content });
const tool = (content: string): ChatMessage => ({ role: "tool", content });

function build(calls: RecordedCall[], compareLevel: CompareLevel = "text") {
  return buildTrainingSamples(calls, { compareLevel, taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat });
}

describe("buildTrainingSamples", () => {
  for (const compareLevel of ["text", "token"] as const) {
    it(`merges a multi-turn conversation into one sample whose mask covers exactly the generated tokens (${compareLevel})`, () => {
      const first = call([sys("a"), user("b")], "yes");
      const second = call([sys("a"), user("b"), assistant("yes"), user("a b")], "no");
      const third = call([sys("a"), user("b"), assistant("yes"), user("a b"), assistant("no"), tool("c")], "yes no");
      const { samples, stats } = build([first, second, third], compareLevel);
      expect(samples).toHaveLength(1);
      expect(samples[0]!.tokenIds).toEqual([S, a, E, U, b, E, A, yes, E, U, a, b, E, A, no, E, T, c, E, A, yes, no, E]);
      expect(samples[0]!.lossMask).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1]);
      // The absorbed calls' own sampling log-probs survive, aligned with their tokens.
      expect(samples[0]!.logprobs?.[7]).toBeCloseTo(-0.1);
      expect(samples[0]!.logprobs?.[15]).toBeCloseTo(-0.2);
      expect(samples[0]!.logprobs?.[3]).toBeUndefined();
      expect(stats).toEqual({ calls: 3, samples: 1, droppedSamples: 0, truncatedSamples: 0, mad: false, tokensWithoutMerge: 9 + 16 + 23, tokensWithMerge: 23 });
    });
  }

  it("keeps two agents with different system prompts as two samples, even when their calls interleave", () => {
    const plannerOne = call([sys("a"), user("c")], "yes");
    const criticOne = call([sys("b"), user("c")], "no");
    const plannerTwo = call([sys("a"), user("c"), assistant("yes"), user("a")], "no");
    const criticTwo = call([sys("b"), user("c"), assistant("no"), user("b")], "yes");
    const { samples } = build([plannerOne, criticOne, plannerTwo, criticTwo]);
    expect(samples.map((sample) => sample.tokenIds)).toEqual([
      [S, a, E, U, c, E, A, yes, E, U, a, E, A, no, E],
      [S, b, E, U, c, E, A, no, E, U, b, E, A, yes, E],
    ]);
    expect(samples[0]!.lossMask).toEqual([0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1]);
    expect(samples[1]!.lossMask).toEqual(samples[0]!.lossMask);
  });

  it("merges calls of different agent names only when the later prompt replays the other agent's call in text and tokens", () => {
    const first = call([user("a")], "yes", { agentName: "planner" });
    const second = call([user("a"), assistant("yes"), user("b")], "no", { agentName: "critic" });
    expect(build([first, second]).samples).toHaveLength(1);
    // The same words with the whitespace the planner produced stripped: equal as text, not as tokens the policy saw.
    const generated = { ...first, completionTokenIds: [123456, E] };
    expect(build([generated, second]).samples).toHaveLength(2);
    expect(build([generated, { ...second, agentName: "planner" }]).samples).toHaveLength(1);
  });

  it("keeps calls offered different tool schemas separate at text level", () => {
    const first = { ...call([user("a")], "yes"), tools: [{ type: "function", function: { name: "search" } }] };
    const second = { ...call([user("a"), assistant("yes"), user("b")], "no"), tools: [{ type: "function", function: { name: "browse" } }] };
    expect(build([first, second]).samples).toHaveLength(2);
    expect(build([first, { ...second, tools: first.tools }]).samples).toHaveLength(1);
  });

  it("keeps edited history separate: a replayed answer that differs from what the policy said is context, not generated", () => {
    const first = call([user("a")], "yes");
    const edited = call([user("a"), assistant("no"), user("b")], "c");
    const { samples } = build([first, edited]);
    expect(samples).toHaveLength(2);
    expect(samples[1]!.tokenIds).toEqual([U, a, E, A, no, E, U, b, E, A, c, E]);
    expect(samples[1]!.lossMask).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
    expect(build([first, edited], "token").samples).toHaveLength(2);
  });

  it("keeps a conversation whose earlier user message was rewritten separate", () => {
    const first = call([sys("a"), user("b")], "yes");
    const rewritten = call([sys("a"), user("c"), assistant("yes"), user("b")], "no");
    expect(build([first, rewritten]).samples).toHaveLength(2);
    expect(build([first, rewritten], "token").samples).toHaveLength(2);
  });

  it("gives a branched ancestor to the latest call that extends it and keeps the earlier branch as its own sample", () => {
    const root = call([user("a")], "yes");
    const left = call([user("a"), assistant("yes"), user("b")], "no");
    const right = call([user("a"), assistant("yes"), user("c")], "no");
    const { samples } = build([root, left, right]);
    expect(samples).toHaveLength(2);
    expect(samples[0]!.tokenIds).toEqual([U, a, E, A, yes, E, U, c, E, A, no, E]);
    expect(samples[0]!.lossMask).toEqual([0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1]);
    expect(samples[1]!.tokenIds).toEqual([U, a, E, A, yes, E, U, b, E, A, no, E]);
    expect(samples[1]!.lossMask).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
  });

  it("trains a retried call that got the same answer once", () => {
    const first = call([sys("a"), user("b")], "yes");
    const retry = { ...first, callIndex: nextIndex++ };
    const next = call([sys("a"), user("b"), assistant("yes"), user("c")], "no");
    const { samples, stats } = build([first, retry, next]);
    expect(samples).toHaveLength(1);
    expect(samples[0]!.lossMask.filter((bit) => bit === 1)).toHaveLength(4);
    expect(stats).toMatchObject({ calls: 3, samples: 1, tokensWithoutMerge: 9 + 9 + 15, tokensWithMerge: 15 });
  });

  it("merges a call cut by max_tokens: the end token the client's replay adds is context", () => {
    const cut = call([user("a")], "yes no", { finishedByLength: true });
    const next = call([user("a"), assistant("yes no"), user("b")], "c");
    const { samples } = build([cut, next]);
    expect(samples).toHaveLength(1);
    expect(samples[0]!.tokenIds).toEqual([U, a, E, A, yes, no, E, U, b, E, A, c, E]);
    expect(samples[0]!.lossMask).toEqual([0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1]);
  });

  it("lets the generated tokens stand in for the replayed message when re-tokenizing gives other ids", () => {
    const generated = { ...call([user("a")], "yes"), completionTokenIds: [123456, E] };
    const next = call([user("a"), assistant("yes"), user("b")], "no");
    const { samples } = build([generated, next]);
    expect(samples).toHaveLength(1);
    expect(samples[0]!.tokenIds).toEqual([U, a, E, A, 123456, E, U, b, E, A, no, E]);
    expect(samples[0]!.lossMask).toEqual([0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1]);
  });

  it("accepts whitespace the client stripped from the replayed answer", () => {
    const first = { ...call([user("a")], "yes"), completionText: " yes\n" };
    const next = call([user("a"), assistant("yes"), user("b")], "no");
    expect(mergeTimelines([first, next], "text")).toHaveLength(1);
  });

  it("orders calls by call index, not by the order they are handed over", () => {
    const first = call([user("a")], "yes");
    const second = call([user("a"), assistant("yes"), user("b")], "no");
    const { samples } = build([second, first]);
    expect(samples).toHaveLength(1);
    expect(samples[0]!.reward).toBe(1);
    expect(samples[0]!.taskId).toBe("t");
  });
});

describe("buildTrainingSamples with AgentJet's limits", () => {
  const branches = () => {
    const root = [sys("a"), user("b")];
    return [call(root, "yes"), call([...root, assistant("yes"), user("a")], "no"), call([...root, assistant("yes"), user("c")], "a"), call(root, "b")];
  };
  const limited = (calls: RecordedCall[], limits: NonNullable<Parameters<typeof buildTrainingSamples>[1]["limits"]>) =>
    buildTrainingSamples(calls, { compareLevel: "text", taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat, limits });

  it("keeps at most max_sample_per_task timelines, chosen at random, and counts the rest", () => {
    const calls = branches();
    expect(limited(calls, {}).samples).toHaveLength(3);
    const seen = new Set<string>();
    for (let round = 0; round < 40; round++) {
      const { samples, stats } = limited(calls, { maxSamples: 2 });
      expect(samples).toHaveLength(2);
      expect(stats).toMatchObject({ samples: 2, droppedSamples: 1 });
      seen.add(samples.map((sample) => sample.tokenIds.length).join(","));
    }
    expect(seen.size).toBeGreaterThan(1);
  });

  it("cuts a sample as AgentJet does: the prompt counted up to max_prompt_length, then max_response_length tokens", () => {
    const first = call([sys("a"), user("b")], "yes");
    const second = call([sys("a"), user("b"), assistant("yes"), user("a b")], "no");
    // 7 prompt tokens before the first trained one, 23 in all.
    const whole = limited([first, second], {}).samples[0]!;
    const { samples, stats } = limited([first, second], { maxPromptTokens: 5, maxResponseTokens: 4 });
    expect(stats.truncatedSamples).toBe(1);
    expect(samples[0]!.tokenIds).toEqual(whole.tokenIds.slice(0, 9));
    expect(samples[0]!.lossMask).toEqual(whole.lossMask.slice(0, 9));
    expect(samples[0]!.logprobs).toEqual(whole.logprobs!.slice(0, 9));
    expect(limited([first, second], { maxPromptTokens: 100, maxResponseTokens: 100 }).stats.truncatedSamples).toBe(0);
  });

  it("trains a mad episode on the madness reward, and with termination drops the calls after the first mad one", () => {
    const root = [sys("a"), user("b")];
    const sane = call(root, "yes");
    const mad = call([...root, assistant("yes"), user("a")], "a a a a a a a a a a a a");
    const after = call([...root, assistant("yes"), user("a"), assistant("a a a a a a a a a a a a"), user("c")], "no");
    const madness = { checklist: ["nonsense"], reward: -1, terminate: true };
    const ended = limited([sane, mad, after], { madness });
    expect(ended.stats.mad).toBe(true);
    expect(ended.samples.map((sample) => sample.reward)).toEqual([-1]);
    // The sample ends with the mad call: the later one was not tracked.
    expect(ended.samples[0]!.tokenIds).toEqual([...mad.promptTokenIds, ...mad.completionTokenIds]);
    const kept = limited([sane, mad, after], { madness: { ...madness, terminate: false } });
    expect(kept.samples[0]!.tokenIds).toEqual([...after.promptTokenIds, ...after.completionTokenIds]);
    expect(limited([sane, mad, after], { madness: { ...madness, checklist: [] } }).stats.mad).toBe(false);
  });

  it("carries the calls' sampling into the sample, and splits a timeline whose calls were sampled differently", () => {
    const first = { ...call([sys("a"), user("b")], "yes"), sampling: { temperature: 0.7, topP: 1 } };
    const same = { ...call([sys("a"), user("b"), assistant("yes"), user("a")], "no"), sampling: { temperature: 0.7, topP: 1 } };
    const [alike] = build([first, same], "token").samples;
    expect({ temperature: alike!.temperature, topP: alike!.topP }).toEqual({ temperature: 0.7, topP: 1 });
    const hotter = { ...same, sampling: { temperature: 1.3, topP: 0.9 } };
    const { samples } = build([first, hotter], "token");
    expect(samples.map((sample) => [sample.temperature, sample.topP])).toEqual([
      [0.7, 1],
      [1.3, 0.9],
    ]);
    // Same tokens; each trains only the tokens drawn at its sampling, and together all of them.
    expect(samples[0]!.tokenIds).toEqual(samples[1]!.tokenIds);
    const trained = (index: number) => samples[index]!.lossMask.flatMap((flag, position) => (flag === 1 ? [samples[index]!.tokenIds[position]] : []));
    expect(trained(0)).toEqual(first.completionTokenIds);
    expect(trained(1)).toEqual(hotter.completionTokenIds);
    // Calls recorded without sampling (older callers) give samples without it.
    expect(build([call([sys("a")], "yes")]).samples[0]).not.toHaveProperty("temperature");
  });
});
