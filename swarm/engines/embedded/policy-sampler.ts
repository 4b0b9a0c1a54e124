import { activeFeatures, computeLogits, logSoftmax, promptTurnKeys } from "./policy-features.ts";
import type { SeededRandom } from "./seeded-random.ts";
import { endTokenId, type WordTokenizer } from "./tokenizer.ts";

export interface SampleOptions {
  temperature: number;
  topP: number;
  maxTokens: number;
  stop: readonly string[];
}

export interface SampledAnswer {
  text: string;
  finishReason: "stop" | "length";
  tokenIds: number[];
  /** Log-probability of each sampled token under the policy itself (temperature 1, no top-p). */
  logprobs: number[];
}

/**
 * Samples one assistant turn. Temperature 0 is greedy. Stops at end-of-turn, at max_tokens,
 * or as soon as the decoded text contains a stop string (the text is cut before it; the
 * token that completed it stays in tokenIds because the policy did sample it).
 */
export function sampleAnswer(
  weights: Float32Array,
  featureBits: number,
  tokenizer: WordTokenizer,
  promptTokens: readonly number[],
  options: SampleOptions,
  random: SeededRandom,
): SampledAnswer {
  const outputSize = tokenizer.outputTokenIds.length;
  const turnKeys = promptTurnKeys(promptTokens, tokenizer);
  const logits = new Float64Array(outputSize);
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  let previous = promptTokens[promptTokens.length - 1] ?? endTokenId;
  for (let position = 0; position < options.maxTokens; position++) {
    computeLogits(weights, activeFeatures(turnKeys, previous, position, featureBits), outputSize, logits);
    const policyLogprobs = Float64Array.from(logits);
    logSoftmax(policyLogprobs);
    const output = pick(logits, options, random);
    const tokenId = tokenizer.outputTokenIds[output]!;
    tokenIds.push(tokenId);
    logprobs.push(policyLogprobs[output]!);
    if (tokenId === endTokenId) return { text: tokenizer.decode(tokenIds), finishReason: "stop", tokenIds, logprobs };
    const text = tokenizer.decode(tokenIds);
    const cut = firstStop(text, options.stop);
    if (cut !== undefined) return { text: text.slice(0, cut), finishReason: "stop", tokenIds, logprobs };
    previous = tokenId;
  }
  return { text: tokenizer.decode(tokenIds), finishReason: "length", tokenIds, logprobs };
}

function firstStop(text: string, stops: readonly string[]): number | undefined {
  let cut: number | undefined;
  for (const stop of stops) {
    if (!stop) continue;
    const at = text.indexOf(stop);
    if (at >= 0 && (cut === undefined || at < cut)) cut = at;
  }
  return cut;
}

function pick(logits: Float64Array, options: SampleOptions, random: SeededRandom): number {
  if (options.temperature <= 0) {
    let best = 0;
    for (let index = 1; index < logits.length; index++) if (logits[index]! > logits[best]!) best = index;
    return best;
  }
  const scaled = logits.map((value) => value / options.temperature);
  logSoftmax(scaled);
  const order = [...scaled.keys()];
  if (options.topP < 1) order.sort((a, b) => scaled[b]! - scaled[a]!);
  let kept = order.length;
  let total = 0;
  for (let rank = 0; rank < order.length; rank++) {
    total += Math.exp(scaled[order[rank]!]!);
    if (options.topP < 1 && total >= options.topP) {
      kept = rank + 1;
      break;
    }
  }
  let threshold = random.next() * total;
  for (let rank = 0; rank < kept; rank++) {
    threshold -= Math.exp(scaled[order[rank]!]!);
    if (threshold <= 0) return order[rank]!;
  }
  return order[kept - 1]!;
}
