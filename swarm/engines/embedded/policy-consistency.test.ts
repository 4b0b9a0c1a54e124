import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../port/engine.ts";
import { buildTrainingSamples, type RecordedCall } from "../../tracking/index.ts";
import { defaultVocabulary } from "./default-vocabulary.ts";
import { activeFeatures, computeLogits, forEachAssistantToken, logSoftmax } from "./policy-features.ts";
import { sampleAnswer } from "./policy-sampler.ts";
import { SeededRandom } from "./seeded-random.ts";
import { createWordTokenizer } from "./tokenizer.ts";

/**
 * Training recomputes, on merged samples, the features the sampler used on each call's own
 * prompt. If the two ever disagree (a turn boundary parsed differently, a previous token
 * off by one), GRPO's importance ratio is silently wrong; this pins them together.
 */
describe("sampler and trainer see the same policy", () => {
  it("gives every generated token of a merged multi-turn sample the log-prob it was sampled with", () => {
    const tokenizer = createWordTokenizer(defaultVocabulary);
    const featureBits = 10;
    const outputSize = tokenizer.outputTokenIds.length;
    const random = new SeededRandom(17);
    const weights = Float32Array.from({ length: (1 << featureBits) * outputSize }, () => (random.next() - 0.5) * 4);

    const messages: ChatMessage[] = [
      { role: "system", content: "You walk on a compass." },
      { role: "user", content: "You face north. Turn left." },
    ];
    const calls: RecordedCall[] = [];
    for (let turn = 0; turn < 4; turn++) {
      const promptTokenIds = tokenizer.encodeChat(messages, { addGenerationPrompt: true }).tokenIds;
      const answer = sampleAnswer(weights, featureBits, tokenizer, promptTokenIds, { temperature: 1, topP: 1, maxTokens: 4, stop: [] }, random);
      calls.push({
        callIndex: turn,
        messages: [...messages],
        promptTokenIds,
        completionTokenIds: answer.tokenIds,
        completionText: answer.text,
        completionLogprobs: answer.logprobs,
        time: turn,
      });
      messages.push({ role: "assistant", content: answer.text }, { role: turn % 2 ? "user" : "tool", content: `step ${turn} done. Turn right.` });
    }
    const { samples } = buildTrainingSamples(calls, { compareLevel: "text", taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat });
    expect(samples).toHaveLength(1);
    const sample = samples[0]!;

    const logits = new Float64Array(outputSize);
    let checked = 0;
    forEachAssistantToken(sample.tokenIds, tokenizer, (index, turnKeys, position) => {
      if (sample.lossMask[index] !== 1) return;
      computeLogits(weights, activeFeatures(turnKeys, sample.tokenIds[index - 1]!, position, featureBits), outputSize, logits);
      logSoftmax(logits);
      expect(logits[tokenizer.outputIndexOf(sample.tokenIds[index]!)]).toBeCloseTo(sample.logprobs![index]!, 9);
      checked++;
    });
    expect(checked).toBe(sample.lossMask.filter((value) => value === 1).length);
    expect(checked).toBe(calls.reduce((sum, call) => sum + call.completionTokenIds.length, 0));
  });
});
