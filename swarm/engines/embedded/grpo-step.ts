import type { TrainingSample } from "../port/engine.ts";
import { activeFeatures, computeLogits, forEachAssistantToken, logSoftmax, type ActiveFeatures } from "./policy-features.ts";
import type { WordTokenizer } from "./tokenizer.ts";

export interface GrpoOptions {
  lr: number;
  klCoef: number;
  /** PPO clip range epsilon: the ratio is clipped to [1 - clip, 1 + clip]. */
  clip: number;
}

/** Everything an optimizer step changes; the arrays are updated in place. */
export interface PolicyState {
  weights: Float32Array;
  adamFirst: Float32Array;
  adamSecond: Float32Array;
  adamStep: number;
}

const adamBeta1 = 0.9;
const adamBeta2 = 0.999;
const adamEpsilon = 1e-8;
const advantageEpsilon = 1e-6;

/**
 * Group-relative advantages: episodes are grouped by task id and each gets
 * (reward - group mean) / (group std + eps); statistics count each episode once even when
 * it produced several samples (multi-agent episodes). A group of one has no baseline and
 * gets advantage 0.
 */
export function groupAdvantages(batch: readonly TrainingSample[]): number[] {
  const groups = new Map<string, Map<string, number>>();
  for (const sample of batch) {
    const episodes = groups.get(sample.taskId) ?? new Map<string, number>();
    episodes.set(sample.episodeUuid, sample.reward);
    groups.set(sample.taskId, episodes);
  }
  const statistics = new Map<string, { mean: number; std: number }>();
  for (const [taskId, episodes] of groups) {
    const rewards = [...episodes.values()];
    const mean = rewards.reduce((sum, value) => sum + value, 0) / rewards.length;
    const variance = rewards.reduce((sum, value) => sum + (value - mean) ** 2, 0) / rewards.length;
    statistics.set(taskId, { mean, std: Math.sqrt(variance) });
  }
  return batch.map((sample) => {
    const { mean, std } = statistics.get(sample.taskId)!;
    return (sample.reward - mean) / (std + advantageEpsilon);
  });
}

/**
 * One GRPO step: clipped policy-gradient on generated tokens (loss mask 1) weighted by the
 * group advantage, plus klCoef times the exact KL divergence to the reference policy
 * (computed over the whole small vocabulary), averaged over generated tokens, then Adam.
 */
export function grpoStep(
  batch: readonly TrainingSample[],
  state: PolicyState,
  reference: Float32Array,
  featureBits: number,
  tokenizer: WordTokenizer,
  options: GrpoOptions,
): Record<string, number> {
  const { gradient, metrics } = grpoGradient(batch, state.weights, reference, featureBits, tokenizer, options);
  if (metrics.tokens! > 0) adamUpdate(state, gradient, options.lr);
  return metrics;
}

/** The GRPO objective's gradient with respect to the weights, and the step's metrics. */
export function grpoGradient(
  batch: readonly TrainingSample[],
  weights: Float32Array,
  reference: Float32Array,
  featureBits: number,
  tokenizer: WordTokenizer,
  options: Omit<GrpoOptions, "lr">,
): { gradient: Float32Array; metrics: Record<string, number> } {
  const outputSize = tokenizer.outputTokenIds.length;
  const gradient = new Float32Array(weights.length);
  const logits = new Float64Array(outputSize);
  const referenceLogits = new Float64Array(outputSize);
  const advantages = groupAdvantages(batch);
  const touchedRows = new Set<number>();
  const tokenGradients: Array<{ features: ActiveFeatures; gradient: Float64Array }> = [];
  let tokens = 0,
    clipped = 0,
    lossSum = 0,
    klSum = 0,
    entropySum = 0;

  batch.forEach((sample, sampleIndex) => {
    const advantage = advantages[sampleIndex]!;
    forEachAssistantToken(sample.tokenIds, tokenizer, (index, turnKeys, position) => {
      if (sample.lossMask[index] !== 1) return;
      const target = tokenizer.outputIndexOf(sample.tokenIds[index]!);
      if (target < 0) return;
      const features = activeFeatures(turnKeys, sample.tokenIds[index - 1]!, position, featureBits);
      computeLogits(weights, features, outputSize, logits);
      computeLogits(reference, features, outputSize, referenceLogits);
      logSoftmax(logits);
      logSoftmax(referenceLogits);
      const logprob = logits[target]!;
      const samplingLogprob = sample.logprobs?.[index] ?? logprob;
      const ratio = Math.exp(logprob - samplingLogprob);
      const clippedRatio = Math.min(Math.max(ratio, 1 - options.clip), 1 + options.clip);
      const isClipped = advantage > 0 ? ratio > 1 + options.clip : advantage < 0 && ratio < 1 - options.clip;
      lossSum += -Math.min(ratio * advantage, clippedRatio * advantage);
      if (isClipped) clipped++;
      let kl = 0;
      let entropy = 0;
      for (let output = 0; output < outputSize; output++) {
        const probability = Math.exp(logits[output]!);
        kl += probability * (logits[output]! - referenceLogits[output]!);
        entropy -= probability * logits[output]!;
      }
      klSum += kl;
      entropySum += entropy;
      // d(loss)/d(logit_o): policy-gradient part -A*ratio*(onehot - p), KL part p*(log p/q - KL).
      const policyWeight = isClipped ? 0 : -advantage * ratio;
      const tokenGradient = new Float64Array(outputSize);
      for (let output = 0; output < outputSize; output++) {
        const probability = Math.exp(logits[output]!);
        const onehot = output === target ? 1 : 0;
        tokenGradient[output] = policyWeight * (onehot - probability) + options.klCoef * probability * (logits[output]! - referenceLogits[output]! - kl);
      }
      tokenGradients.push({ features, gradient: tokenGradient });
      tokens++;
    });
  });

  const scale = tokens > 0 ? 1 / tokens : 0;
  for (const { features, gradient: tokenGradient } of tokenGradients) {
    features.rows.forEach((row, featureIndex) => {
      touchedRows.add(row);
      const factor = scale * features.scales[featureIndex]!;
      const offset = row * outputSize;
      for (let output = 0; output < outputSize; output++) gradient[offset + output]! += tokenGradient[output]! * factor;
    });
  }
  let gradientSquares = 0;
  for (const row of touchedRows) {
    const offset = row * outputSize;
    for (let output = 0; output < outputSize; output++) gradientSquares += gradient[offset + output]! ** 2;
  }

  const episodeRewards = new Map(batch.map((sample) => [sample.episodeUuid, sample.reward]));
  const rewards = [...episodeRewards.values()];
  const rewardMean = rewards.length ? rewards.reduce((sum, value) => sum + value, 0) / rewards.length : 0;
  const rewardStd = rewards.length ? Math.sqrt(rewards.reduce((sum, value) => sum + (value - rewardMean) ** 2, 0) / rewards.length) : 0;
  const metrics = {
    loss: (lossSum + options.klCoef * klSum) * scale,
    kl: klSum * scale,
    entropy: entropySum * scale,
    grad_norm: Math.sqrt(gradientSquares),
    clip_fraction: clipped * scale,
    tokens,
    samples: batch.length,
    reward_mean: rewardMean,
    reward_std: rewardStd,
    advantage_nonzero_fraction: batch.length ? advantages.filter((value) => Math.abs(value) > 1e-9).length / batch.length : 0,
  };
  return { gradient, metrics };
}

/** Dense Adam with bias correction (the table is small enough that sparsity buys little). */
function adamUpdate(state: PolicyState, gradient: Float32Array, lr: number): void {
  state.adamStep += 1;
  const correction1 = 1 - adamBeta1 ** state.adamStep;
  const correction2 = 1 - adamBeta2 ** state.adamStep;
  const { weights, adamFirst, adamSecond } = state;
  for (let index = 0; index < weights.length; index++) {
    const g = gradient[index]!;
    const first = adamBeta1 * adamFirst[index]! + (1 - adamBeta1) * g;
    const second = adamBeta2 * adamSecond[index]! + (1 - adamBeta2) * g * g;
    adamFirst[index] = first;
    adamSecond[index] = second;
    weights[index]! -= (lr * (first / correction1)) / (Math.sqrt(second / correction2) + adamEpsilon);
  }
}
