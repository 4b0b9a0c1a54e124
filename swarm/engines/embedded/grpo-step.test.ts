import { describe, expect, it } from "vitest";
import type { TrainingSample } from "../port/engine.ts";
import { groupAdvantages, grpoGradient, grpoStep } from "./grpo-step.ts";
import { createWordTokenizer } from "./tokenizer.ts";

const tokenizer = createWordTokenizer(["yes", "no", "maybe"]);
const featureBits = 8;
const size = (1 << featureBits) * tokenizer.outputTokenIds.length;

function sample(episodeUuid: string, taskId: string, answer: string, reward: number, logprobs?: number[]): TrainingSample {
  const prompt = tokenizer.encodeChat([{ role: "user", content: `is it ${taskId} ?` }], { addGenerationPrompt: true }).tokenIds;
  const completion = [...tokenizer.encodeText(answer), 4];
  return {
    taskId,
    episodeUuid,
    tokenIds: [...prompt, ...completion],
    lossMask: [...prompt.map(() => 0), ...completion.map(() => 1)],
    ...(logprobs ? { logprobs: [...prompt.map(() => undefined), ...logprobs] } : {}),
    reward,
  };
}

function randomWeights(seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length: size }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state / 2 ** 32 - 0.5) * 0.6;
  });
}

describe("groupAdvantages", () => {
  it("normalizes rewards within each task id and counts a multi-sample episode once", () => {
    const batch = [sample("a", "x", "yes", 1), sample("b", "x", "no", 0), sample("b", "x", "no", 0), sample("c", "y", "yes", 1), sample("d", "y", "no", 1)];
    const advantages = groupAdvantages(batch);
    expect(advantages[0]).toBeCloseTo(1, 5);
    expect(advantages[1]).toBeCloseTo(-1, 5);
    expect(advantages[2]).toBeCloseTo(-1, 5);
    // A group whose rewards are all equal carries no signal.
    expect(advantages[3]).toBe(0);
    expect(advantages[4]).toBe(0);
  });
});

describe("grpoGradient", () => {
  const batch = [sample("a", "x", "yes", 1, [-1.2, -0.9]), sample("b", "x", "no maybe", 0, [-1.0, -1.5, -1.1]), sample("c", "x", "maybe", 0.5, [-1.3, -1.0])];
  const options = { klCoef: 0.3, clip: 10 };

  it("matches finite differences of the reported loss (policy gradient with ratio, plus exact KL)", () => {
    const weights = randomWeights(1);
    const reference = randomWeights(2);
    const { gradient } = grpoGradient(batch, weights, reference, featureBits, tokenizer, options);
    const touched = [...gradient.keys()].filter((index) => Math.abs(gradient[index]!) > 1e-4).slice(0, 12);
    expect(touched.length).toBeGreaterThan(5);
    for (const index of touched) {
      const epsilon = 1e-2;
      const plus = Float32Array.from(weights);
      const minus = Float32Array.from(weights);
      plus[index]! += epsilon;
      minus[index]! -= epsilon;
      const numeric =
        (grpoGradient(batch, plus, reference, featureBits, tokenizer, options).metrics.loss! -
          grpoGradient(batch, minus, reference, featureBits, tokenizer, options).metrics.loss!) /
        (2 * epsilon);
      expect(gradient[index]!).toBeCloseTo(numeric, 3);
    }
  });

  it("puts no gradient on clipped tokens but still counts them in the token mean", () => {
    const weights = new Float32Array(size);
    const uniform = -Math.log(4);
    // Sampled far less likely than now: ratio >> 1 + clip on the positive sample.
    const clipped = sample("a", "x", "yes", 1, [-9, -9]);
    const negative = sample("b", "x", "no", 0, [uniform, uniform]);
    const { gradient, metrics } = grpoGradient([clipped, negative], weights, weights, featureBits, tokenizer, { klCoef: 0, clip: 0.2 });
    expect(metrics.clip_fraction).toBe(0.5);
    expect(metrics.tokens).toBe(4);
    // The same batch with the positive sample's tokens masked out: only the negative sample
    // contributes, averaged over 2 tokens instead of 4.
    const masked = { ...clipped, lossMask: clipped.lossMask.map(() => 0) };
    const { gradient: negativeOnly } = grpoGradient([masked, negative], weights, weights, featureBits, tokenizer, { klCoef: 0, clip: 0.2 });
    expect(gradient.some((value) => value !== 0)).toBe(true);
    gradient.forEach((value, index) => expect(value).toBeCloseTo(negativeOnly[index]! / 2, 6));
  });
});

describe("grpoStep", () => {
  it("raises the probability of the better answer and lowers the worse one", () => {
    const state = { weights: new Float32Array(size), adamFirst: new Float32Array(size), adamSecond: new Float32Array(size), adamStep: 0 };
    const reference = new Float32Array(size);
    // Sampled from the initial (uniform over end + 3 words) policy.
    const uniform = -Math.log(4);
    const batch = [sample("a", "x", "yes", 1, [uniform, uniform]), sample("b", "x", "no", 0, [uniform, uniform])];
    const before = grpoGradient(batch, state.weights, reference, featureBits, tokenizer, { klCoef: 0, clip: 0.2 });
    expect(before.metrics.kl).toBeCloseTo(0, 9);
    for (let step = 0; step < 5; step++) grpoStep(batch, state, reference, featureBits, tokenizer, { lr: 0.1, klCoef: 0, clip: 0.2 });
    expect(state.adamStep).toBe(5);
    const after = grpoGradient(batch, state.weights, reference, featureBits, tokenizer, { klCoef: 0, clip: 0.2 });
    expect(after.metrics.kl).toBeGreaterThan(0);
    // Loss = -A * ratio summed: lower once "yes" became likelier and "no" less likely.
    expect(before.metrics.loss).toBeCloseTo(0, 9);
    expect(after.metrics.loss).toBeLessThan(-0.1);
  });
});
