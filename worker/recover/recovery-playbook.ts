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
export type Overrides = Record<string, string | number | boolean>;

export type RecoveryStrategy =
  | "shrink_batch"
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
  nan_loss: { strategy: "lower_lr_and_resume", maxAttempts: 2 },
  port_in_use: { strategy: "change_port", maxAttempts: 3 },
  killed: { strategy: "resume_from_checkpoint", maxAttempts: 3 },
  hang: { strategy: "resume_from_checkpoint", maxAttempts: 2 },
  external_api_rate_limit: { strategy: "back_off_and_retry", maxAttempts: 3, delaysMs: [30_000, 120_000, 480_000] },
  external_api_auth: { strategy: "back_off_and_retry", maxAttempts: 1, delaysMs: [60_000] },
  missing_file: { strategy: "fail_fast", maxAttempts: 0 },
  missing_module: { strategy: "fail_fast", maxAttempts: 0 },
  unknown: { strategy: "ask_llm", maxAttempts: 2 },
};

/** Config keys that hold a batch size, in the order they are shrunk (micro-batches first). */
export const batchSizeKeys = ["ppo_micro_batch_size_per_gpu", "micro_batch_size", "per_device_train_batch_size", "train_batch_size", "batch_size"];
export const learningRateKeys = ["lr", "learning_rate", "optim.lr", "actor.optim.lr"];

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
  const present = keys.filter((key) => typeof currentValue(context, key) === "number");
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
  if (entry.strategy === "fail_fast") return { kind: "fail", reason: `${seen} (not retryable: fix the blueprint or the environment)` };
  if (context.attemptsOfClass >= entry.maxAttempts) {
    return { kind: "fail", reason: `${seen} (gave up after ${context.attemptsOfClass} recoveries of this kind)` };
  }
  switch (entry.strategy) {
    case "shrink_batch":
      return changeKeys(context, batchSizeKeys, (value) => Math.max(1, Math.floor(value / 2)), entry.strategy, seen, false);
    case "lower_lr_and_resume":
      return changeKeys(context, learningRateKeys, (value) => value / 2, entry.strategy, seen, true);
    case "change_port": {
      if (!context.freePort) return { kind: "fail", reason: `${seen} (no way to pick another port here)` };
      const from = context.overrides.port;
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
      const delayMs = delays[Math.min(context.attemptsOfClass, delays.length - 1)]!;
      return {
        kind: "relaunch",
        strategy: entry.strategy,
        overrides: context.overrides,
        changed: [],
        resumeFromCheckpoint: context.hasCheckpoint,
        delayMs,
        reason: seen,
      };
    }
    case "ask_llm":
      return { kind: "ask_llm", reason: seen };
  }
}
