import type { ChatMessage } from "../swarm/engines/port/engine.ts";
import { defaultVocabulary } from "../swarm/engines/embedded/default-vocabulary.ts";
import { createWordTokenizer } from "../swarm/engines/embedded/tokenizer.ts";
import { buildTrainingSamples, type CompareLevel, type RecordedCall } from "../swarm/tracking/index.ts";
import type { Benchmark, BenchRow } from "./report.ts";

/**
 * Timeline merging on generated ReAct-style episodes (system prompt, task, then per turn a
 * thought+action from the policy and a tool observation): training tokens without merging
 * (every call its own sample) against with merging, and how merge time grows with the
 * number of turns. Every call carries the whole history, so the input itself grows with
 * turns squared; "linear" here means constant time per input token.
 */
const lengths = [5, 10, 20, 40];
const tokenizer = createWordTokenizer(defaultVocabulary);

function words(count: number, seed: number): string {
  return Array.from({ length: count }, (_, index) => `w${(seed * 31 + index * 7) % 997}`).join(" ");
}

/** One episode's recorded calls; messages are re-parsed per call, as a server receives them. */
function reactEpisode(turns: number, seed: number): RecordedCall[] {
  const history: ChatMessage[] = [
    { role: "system", content: `You are a research agent. ${words(80, seed)}` },
    { role: "user", content: `Task: ${words(25, seed + 1)}` },
  ];
  const calls: RecordedCall[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const messages = JSON.parse(JSON.stringify(history)) as ChatMessage[];
    const completionText = `thought ${words(10, seed + turn * 3)} action search ${words(4, seed + turn)}`;
    calls.push({
      callIndex: turn,
      messages,
      promptTokenIds: tokenizer.encodeChat(messages, { addGenerationPrompt: true }).tokenIds,
      completionTokenIds: [...tokenizer.encodeText(completionText), 4],
      completionText,
      completionLogprobs: [],
      time: turn,
    });
    history.push({ role: "assistant", content: completionText }, { role: "tool", content: `observation ${words(30, seed + turn * 5)}` });
  }
  return calls;
}

function measure(turns: number, compareLevel: CompareLevel) {
  const episodes = Array.from({ length: Math.max(20, Math.round(2000 / turns)) }, (_, index) => reactEpisode(turns, index));
  const options = (index: number) => ({ compareLevel, taskId: "t", episodeUuid: `e${index}`, reward: 1, encodeChat: tokenizer.encodeChat });
  let without = 0,
    withMerge = 0,
    inputTokens = 0,
    samples = 0;
  const started = performance.now();
  episodes.forEach((calls, index) => {
    const { stats } = buildTrainingSamples(calls, options(index));
    without += stats.tokensWithoutMerge;
    withMerge += stats.tokensWithMerge;
    samples += stats.samples;
  });
  const elapsedMs = performance.now() - started;
  for (const calls of episodes) for (const call of calls) inputTokens += call.promptTokenIds.length + call.completionTokenIds.length;
  const perEpisodeMs = elapsedMs / episodes.length;
  return {
    ratio: without / withMerge,
    samplesPerEpisode: samples / episodes.length,
    perEpisodeMs,
    perTurnUs: (perEpisodeMs * 1000) / turns,
    perInputTokenNs: (elapsedMs * 1e6) / inputTokens,
  };
}

const benchmark: Benchmark = {
  title: "Timeline merging on ReAct-style episodes",
  async run() {
    const rows: BenchRow[] = [];
    const perToken = new Map<number, number>();
    // Warm the JIT on every shape first, then keep the fastest of three runs of each.
    for (const turns of lengths) for (const level of ["text", "token"] as const) measure(turns, level);
    const best = (turns: number, level: CompareLevel) => [0, 1, 2].map(() => measure(turns, level)).sort((a, b) => a.perEpisodeMs - b.perEpisodeMs)[0]!;
    for (const turns of lengths) {
      const text = best(turns, "text");
      const token = best(turns, "token");
      perToken.set(turns, text.perInputTokenNs);
      rows.push({
        name: `${turns} turns: training tokens without / with merging`,
        value: text.ratio,
        ...(turns === 20 ? { goal: ">= 5", met: text.ratio >= 5 } : {}),
      });
      rows.push({ name: `${turns} turns: samples per episode`, value: text.samplesPerEpisode, goal: "1", met: text.samplesPerEpisode === 1 });
      rows.push({ name: `${turns} turns: merge time per episode (text)`, value: text.perEpisodeMs, unit: "ms" });
      rows.push({ name: `${turns} turns: merge time per turn (text)`, value: text.perTurnUs, unit: "us" });
      rows.push({ name: `${turns} turns: merge time per input token (text)`, value: text.perInputTokenNs, unit: "ns" });
      rows.push({ name: `${turns} turns: merge time per turn (token)`, value: token.perTurnUs, unit: "us" });
    }
    const growth = perToken.get(40)! / perToken.get(5)!;
    rows.push({ name: "time per input token, 40 turns / 5 turns", value: growth, goal: "<= 2 (linear in the input)", met: growth <= 2 });
    return {
      title: benchmark.title,
      rows,
      notes: [
        "each call resends the whole history, so input tokens grow with turns squared; merging reads each once, so time per input token stays flat while time per turn grows with the history length",
        "system prompt ~85 words, task ~26, per turn a 16-word thought+action and a 31-word observation",
      ],
    };
  },
};

export default benchmark;
