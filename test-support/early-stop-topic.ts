import { copyFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A topic that opts in to early stopping, over test-support/early-stop-trainer.mjs: one knob
 * (lr 0.03 baseline, 0.3, 3), one seed, `max_steps: 20` in the base overrides, rungs at 25%
 * and 50% (steps 5 and 10), keep half, equivalence 0.1. lr 3 scores 0.1 from its first
 * step (0.7 below the best), lr 0.3 scores 0.75 (within the margin of lr 0.03's 0.8): the
 * heuristic planner screens all three in one stage, and early stopping cuts lr 3 alone.
 */
const trainerSource = fileURLToPath(new URL("./early-stop-trainer.mjs", import.meta.url));

export const earlyStopBlueprintIds = { good: "s1-baseline-seed1", close: "s1-lr-0.3-seed1", bad: "s1-lr-3-seed1" } as const;

/** Writes the trainer and `topic.md` into `dir`; returns the topic file's path. */
export async function writeEarlyStopTopic(dir: string, options: { stepMs?: number } = {}): Promise<string> {
  await copyFile(trainerSource, join(dir, "trainer.mjs"));
  const file = join(dir, "topic.md");
  await writeFile(
    file,
    `---
title: Which lr does the early-stop trainer like?
metric: { name: reward_mean, goal: maximize, score: final, equivalence: 0.1 }
base:
  mode: classic
  codebase: ${dir}
  interpreter: ${process.execPath}
  command: ${process.execPath} trainer.mjs --step-ms ${options.stepMs ?? 200}
  time_budget: 2m
  first_signal_timeout: 1m
  gpus: 0
  overrides: { max_steps: 20 }
  blueprint:
    worker: { poll_interval: 100ms, heartbeat_interval: 1s, stall_timeout: 1m, grace_period: 1s, lease_ttl: 30s }
knobs:
  lr: [0.03, 0.3, 3]
seeds: 1
early_stop: { rungs: [0.25, 0.5], keep: 0.5 }
budgets: { stages: 1, experiments: 3 }
leader: { poll_interval: 200ms }
---
Which learning rate gives the early-stop trainer its best final reward_mean?
`,
  );
  return file;
}
