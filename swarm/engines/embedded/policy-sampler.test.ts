import { describe, expect, it } from "vitest";
import { sampleAnswer } from "./policy-sampler.ts";
import { activeFeatures, promptTurnKeys } from "./policy-features.ts";
import { SeededRandom } from "./seeded-random.ts";
import { createWordTokenizer } from "./tokenizer.ts";

const tokenizer = createWordTokenizer(["yes", "no", "maybe"]);
const featureBits = 8;
const prompt = tokenizer.encodeChat([{ role: "user", content: "well ?" }], { addGenerationPrompt: true }).tokenIds;

/** Weights under which the first answer token is "yes" (p ~ 0.7), "no" (~ 0.26), else rare. */
function biasedWeights(): Float32Array {
  const weights = new Float32Array((1 << featureBits) * 4);
  const features = activeFeatures(promptTurnKeys(prompt, tokenizer), prompt.at(-1)!, 0, featureBits);
  weights[features.rows[0]! * 4 + 1] = 4;
  weights[features.rows[0]! * 4 + 2] = 3;
  return weights;
}

describe("sampleAnswer", () => {
  const options = { temperature: 1, topP: 1, maxTokens: 1, stop: [] };

  it("is greedy at temperature 0 and reproducible with the same seed", () => {
    const weights = biasedWeights();
    expect(sampleAnswer(weights, featureBits, tokenizer, prompt, { ...options, temperature: 0 }, new SeededRandom(1)).text).toBe("yes");
    const first = sampleAnswer(weights, featureBits, tokenizer, prompt, { ...options, maxTokens: 5 }, new SeededRandom(9));
    const again = sampleAnswer(weights, featureBits, tokenizer, prompt, { ...options, maxTokens: 5 }, new SeededRandom(9));
    expect(again).toEqual(first);
  });

  it("samples only from the top-p nucleus, and widens with temperature", () => {
    const weights = biasedWeights();
    const count = (topP: number, temperature: number) => {
      const seen = new Map<string, number>();
      const random = new SeededRandom(3);
      for (let index = 0; index < 400; index++) {
        const text = sampleAnswer(weights, featureBits, tokenizer, prompt, { ...options, topP, temperature }, random).text;
        seen.set(text, (seen.get(text) ?? 0) + 1);
      }
      return seen;
    };
    expect([...count(0.5, 1).keys()]).toEqual(["yes"]);
    expect([...count(0.9, 1).keys()].sort()).toEqual(["no", "yes"]);
    expect(count(1, 5).size).toBe(4);
  });

  it("reports the policy's own log-probs, unchanged by temperature", () => {
    const weights = biasedWeights();
    const hot = sampleAnswer(weights, featureBits, tokenizer, prompt, { ...options, temperature: 0 }, new SeededRandom(1));
    const expected = 4 - Math.log(Math.exp(4) + Math.exp(3) + 2);
    expect(hot.logprobs[0]).toBeCloseTo(expected, 6);
    expect(hot.finishReason).toBe("length");
  });
});
