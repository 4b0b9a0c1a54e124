import type { Overrides } from "./apply-overrides.ts";

/**
 * The names one concept goes by across trainers, for the worker's recovery playbook: the
 * batch size an out-of-memory halves, the learning rate a NaN loss halves, vLLM's KV-cache
 * knobs. Matched against a run's overrides and base values (apply-overrides.ts
 * `baseValuesOf`) by whole key or by the last parts of a dotted path, so `lr` also finds
 * `optimizer.lr` and `optim.lr` finds `actor.optim.lr`.
 */

/** Batch-size keys in the order they are shrunk (micro-batches first). */
export const batchSizeKeys = ["ppo_micro_batch_size_per_gpu", "micro_batch_size", "per_device_train_batch_size", "train_batch_size", "batch_size"];
export const learningRateKeys = ["lr", "learning_rate", "optim.lr", "actor.optim.lr"];
/**
 * vLLM's KV-cache knobs, by the last part of their config path: verl's
 * `actor_rollout_ref.rollout.gpu_memory_utilization`, and a3r's own vllm engine's
 * `model.inference` field in either spelling swarm.yaml accepts (swarm/README.md).
 */
export const gpuMemoryUtilizationLeaves = ["gpu_memory_utilization", "gpuMemoryUtilization"];
export const maxModelLenLeaves = ["max_model_len", "maxModelLen"];

/** The key ending in `name` that holds a number: from the overrides first, then the base values; the longest path wins. */
export function numericKeyByName(name: string, overrides: Overrides, baseValues: Overrides | undefined): string | undefined {
  const matches = (source: Overrides | undefined) =>
    Object.keys(source ?? {}).filter((key) => (key === name || key.endsWith(`.${name}`)) && typeof source![key] === "number");
  const fromOverrides = matches(overrides);
  if (fromOverrides.length > 0) return fromOverrides.sort((a, b) => b.length - a.length)[0];
  return matches(baseValues).sort((a, b) => b.length - a.length)[0];
}

/** The first name of `names` (in their order) that a numeric key of the run answers to, as that key. */
export function firstNumericKey(names: readonly string[], overrides: Overrides, baseValues: Overrides | undefined): string | undefined {
  for (const name of names) {
    const key = numericKeyByName(name, overrides, baseValues);
    if (key) return key;
  }
  return undefined;
}
