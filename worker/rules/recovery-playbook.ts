import {
  type Overrides,
  batchSizeKeys,
  firstNumericKey,
  gpuMemoryUtilizationLeaves,
  learningRateKeys,
  maxModelLenLeaves,
  numericKeyByName,
} from "../../blueprints/index.ts";
import { formatDuration } from "../../core/duration.ts";
import type { Classification, FailureClass } from "./failure-classifier.ts";

/**
 * What the worker does about a classified failure. The playbook is data: one entry per
 * failure class with its attempt bound and a named strategy; `decideRecovery` is a pure
 * function of the classification, the attempts used so far and the current overrides, so
 * every decision can be tested and written to attempts.md as a diff.
 *
 * Example sequence (out of memory twice, then fine):
 *   attempt 1: "CUDA out of memory" → out_of_memory → train_batch_size 64 → 32, relaunch
 *   attempt 2: "CUDA out of memory" → out_of_memory → train_batch_size 32 → 16, relaunch
 *   attempt 3: runs to the end → succeeded
 */
export type RecoveryStrategy =
  | "shrink_batch"
  | "adjust_kv_cache"
  | "lower_lr_and_resume"
  | "change_port"
  | "resume_from_checkpoint"
  | "back_off_and_retry"
  | "fail_fast"
  | "ask_llm";

export interface PlaybookEntry {
  strategy: RecoveryStrategy;
  /** Attempts of this class allowed before the run fails. */
  maxAttempts: number;
  /** For back-off strategies: delay before each retry. */
  delaysMs?: number[];
}

export const defaultPlaybook: Record<FailureClass, PlaybookEntry> = {
  out_of_memory: { strategy: "shrink_batch", maxAttempts: 3 },
  kv_cache_memory: { strategy: "adjust_kv_cache", maxAttempts: 3 },
  nan_loss: { strategy: "lower_lr_and_resume", maxAttempts: 2 },
  port_in_use: { strategy: "change_port", maxAttempts: 3 },
  killed: { strategy: "resume_from_checkpoint", maxAttempts: 3 },
  hang: { strategy: "resume_from_checkpoint", maxAttempts: 2 },
  distributed_failure: { strategy: "resume_from_checkpoint", maxAttempts: 2 },
  external_api_rate_limit: { strategy: "back_off_and_retry", maxAttempts: 3, delaysMs: [30_000, 120_000, 480_000] },
  // A refused key or a forbidden region does not heal by waiting: fail with the line.
  external_api_auth: { strategy: "fail_fast", maxAttempts: 0 },
  cuda_fault: { strategy: "fail_fast", maxAttempts: 0 },
  missing_model: { strategy: "fail_fast", maxAttempts: 0 },
  config_invalid: { strategy: "fail_fast", maxAttempts: 0 },
  missing_file: { strategy: "fail_fast", maxAttempts: 0 },
  missing_module: { strategy: "fail_fast", maxAttempts: 0 },
  unknown: { strategy: "ask_llm", maxAttempts: 2 },
};

/** What a person must do about a fail-fast class (a retry cannot help). */
export const failFastAdvice: Partial<Record<FailureClass, string>> = {
  external_api_auth: "the external API refused the credentials or the region: fix the key or the endpoint",
  cuda_fault: "a CUDA kernel faulted (a bug, bad input such as an out-of-range token id, or a broken GPU): a blind retry would repeat it",
  missing_model: "the model or its files are not where the blueprint says: fix the model path or id (or the token of a gated repository)",
  config_invalid:
    "the configuration (with the blueprint's overrides) is outside what the engine accepts: fix the field named above, or the override that set it",
  missing_file: "fix the blueprint or the environment",
  missing_module: "fix the blueprint or the environment",
};

/** The shortest back-off worth making: below it the budget is spent, and the run gives up. */
export const minimumBackoffMs = 1_000;

/** vLLM refuses more than this; above it the cache has nowhere to grow. */
export const maxGpuMemoryUtilization = 0.95;
/** Below this a model cannot hold a useful prompt plus answer; halving stops here. */
export const minMaxModelLen = 512;

export type RecoveryDecision =
  | {
      kind: "relaunch";
      strategy: RecoveryStrategy;
      /** The new overrides (complete, not a delta); `changed` lists what differs. */
      overrides: Overrides;
      changed: Array<{ key: string; from: string | number | boolean | undefined; to: string | number | boolean }>;
      resumeFromCheckpoint: boolean;
      delayMs: number;
      reason: string;
    }
  | { kind: "ask_llm"; reason: string }
  | { kind: "fail"; reason: string };

export interface RecoveryContext {
  classification: Classification;
  /** How many recoveries of this class were already made in this run. */
  attemptsOfClass: number;
  overrides: Overrides;
  /** Base values for keys the blueprint did not override (from its config), when known. */
  baseValues?: Overrides;
  hasCheckpoint: boolean;
  /** Time left in the run's budget; back-offs must fit in it (undefined = no limit known). */
  budgetLeftMs?: number;
  /** How long the failed attempt ran; a back-off leaves room for a retry at least twice as long. */
  lastAttemptMs?: number;
  /** Picks a free port (impure, so injected). */
  freePort?: () => number;
  playbook?: Record<FailureClass, PlaybookEntry>;
}

function currentValue(context: RecoveryContext, key: string): string | number | boolean | undefined {
  return context.overrides[key] ?? context.baseValues?.[key];
}

function changeKeys(
  context: RecoveryContext,
  keys: string[],
  change: (value: number) => number,
  strategy: RecoveryStrategy,
  reason: string,
  resume: boolean,
): RecoveryDecision {
  // A key of the list, or a nested config path ending in one (actor.optim.lr for lr), in the list's order.
  const present = keys.flatMap((key) => {
    if (typeof currentValue(context, key) === "number") return [key];
    const nested = numericKeyByName(key, context.overrides, context.baseValues);
    return nested ? [nested] : [];
  });
  if (present.length === 0) {
    return { kind: "fail", reason: `${reason}, but none of ${keys.join(", ")} is set in the overrides or the config, so there is nothing to change` };
  }
  const key = present[0]!;
  const from = currentValue(context, key) as number;
  const to = change(from);
  if (to === from) return { kind: "fail", reason: `${reason}, and ${key} is already at its floor (${from})` };
  return {
    kind: "relaunch",
    strategy,
    overrides: { ...context.overrides, [key]: to },
    changed: [{ key, from, to }],
    resumeFromCheckpoint: resume && context.hasCheckpoint,
    delayMs: 0,
    reason,
  };
}

export function decideRecovery(context: RecoveryContext): RecoveryDecision {
  const playbook = context.playbook ?? defaultPlaybook;
  const { failureClass, evidence } = context.classification;
  const entry = playbook[failureClass];
  const seen = `${failureClass.replaceAll("_", " ")}: ${evidence}`;
  if (entry.strategy === "fail_fast") {
    return { kind: "fail", reason: `${seen} (not retryable: ${failFastAdvice[failureClass] ?? "fix the blueprint or the environment"})` };
  }
  if (context.attemptsOfClass >= entry.maxAttempts) {
    return { kind: "fail", reason: `${seen} (gave up after ${context.attemptsOfClass} recoveries of this kind)` };
  }
  switch (entry.strategy) {
    case "shrink_batch":
      // A smaller batch continues from the checkpoint when there is one: the steps before the OOM are kept.
      return changeKeys(context, batchSizeKeys, (value) => Math.max(1, Math.floor(value / 2)), entry.strategy, seen, true);
    case "adjust_kv_cache":
      return adjustKvCache(context, seen);
    case "lower_lr_and_resume":
      return changeKeys(context, learningRateKeys, (value) => value / 2, entry.strategy, seen, true);
    case "change_port": {
      if (!context.freePort) return { kind: "fail", reason: `${seen} (no way to pick another port here)` };
      // The config's own port when the blueprint never overrode it, so attempts.md says 29500 → 46057.
      const from = currentValue(context, "port");
      const to = context.freePort();
      return {
        kind: "relaunch",
        strategy: entry.strategy,
        overrides: { ...context.overrides, port: to },
        changed: [{ key: "port", from, to }],
        resumeFromCheckpoint: context.hasCheckpoint,
        delayMs: 0,
        reason: seen,
      };
    }
    case "resume_from_checkpoint":
      return {
        kind: "relaunch",
        strategy: entry.strategy,
        overrides: context.overrides,
        changed: [],
        resumeFromCheckpoint: context.hasCheckpoint,
        delayMs: 0,
        reason: seen,
      };
    case "back_off_and_retry": {
      const delays = entry.delaysMs ?? [30_000];
      const scheduled = delays[Math.min(context.attemptsOfClass, delays.length - 1)]!;
      // The wait must leave time for the retry itself: at most half of what is left, and no
      // more than leaves twice as long as the failed attempt ran.
      const left = context.budgetLeftMs;
      const room = left === undefined ? scheduled : Math.floor(Math.min(left / 2, left - 2 * (context.lastAttemptMs ?? 0)));
      const delayMs = Math.min(scheduled, room);
      if (delayMs < scheduled && delayMs < minimumBackoffMs) {
        return {
          kind: "fail",
          reason: `${seen} (gave up after ${context.attemptsOfClass} back-offs: the ${formatDuration(context.budgetLeftMs ?? 0)} left of the budget leave no room for another wait and retry)`,
        };
      }
      return {
        kind: "relaunch",
        strategy: entry.strategy,
        overrides: context.overrides,
        changed: [],
        resumeFromCheckpoint: context.hasCheckpoint,
        delayMs,
        reason: delayMs < scheduled ? `${seen} (back-off shortened from ${formatDuration(scheduled)} to ${formatDuration(delayMs)} to fit the budget)` : seen,
      };
    }
    case "ask_llm":
      return { kind: "ask_llm", reason: seen };
  }
}

/**
 * vLLM could not fit its KV cache: more memory for the cache (gpu_memory_utilization up by
 * 0.1, at most 0.95) or shorter sequences (max_model_len halved, at least 512). A smaller
 * batch would not help: the cache is sized before the first batch. When vLLM says the
 * model's length does not fit, the length goes first.
 */
function adjustKvCache(context: RecoveryContext, seen: string): RecoveryDecision {
  const lengthFirst = context.classification.ruleId === "vllm-kv-cache-max-model-len";
  const memoryKey = firstNumericKey(gpuMemoryUtilizationLeaves, context.overrides, context.baseValues);
  const lengthKey = firstNumericKey(maxModelLenLeaves, context.overrides, context.baseValues);
  const raiseMemory = (): RecoveryDecision | undefined => {
    if (!memoryKey) return undefined;
    const from = currentValue(context, memoryKey) as number;
    const to = Math.min(maxGpuMemoryUtilization, Math.round((from + 0.1) * 100) / 100);
    if (to <= from) return undefined;
    return relaunchWith(context, memoryKey, from, to, seen);
  };
  const shortenLength = (): RecoveryDecision | undefined => {
    if (!lengthKey) return undefined;
    const from = currentValue(context, lengthKey) as number;
    const to = Math.max(minMaxModelLen, Math.floor(from / 2));
    if (to >= from) return undefined;
    return relaunchWith(context, lengthKey, from, to, seen);
  };
  const decision = lengthFirst ? (shortenLength() ?? raiseMemory()) : (raiseMemory() ?? shortenLength());
  if (decision) return decision;
  return {
    kind: "fail",
    reason: `${seen}, but neither ${gpuMemoryUtilizationLeaves[0]} (below ${maxGpuMemoryUtilization}) nor ${maxModelLenLeaves[0]} (above ${minMaxModelLen}) is set in the overrides or the config, so there is nothing to change (a smaller batch would not help: set one of them)`,
  };
}

function relaunchWith(context: RecoveryContext, key: string, from: number, to: number, seen: string): RecoveryDecision {
  return {
    kind: "relaunch",
    strategy: "adjust_kv_cache",
    overrides: { ...context.overrides, [key]: to },
    changed: [{ key, from, to }],
    resumeFromCheckpoint: context.hasCheckpoint,
    delayMs: 0,
    reason: seen,
  };
}
