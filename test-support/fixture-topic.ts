import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

/**
 * A research topic over the fixture trainer (worker/__fixtures__/trainer.mjs): one knob,
 * two values, one seed, runs that finish in a second. For leader and CLI tests.
 */
export function fixtureTopicText(options: { stages: number; title?: string }): string {
  return `---
title: ${options.title ?? "Does lr change the fixture trainer's reward?"}
metric: { name: reward_mean, goal: maximize, score: final }
base:
  mode: classic
  codebase: ${join(root, "worker/__fixtures__")}
  interpreter: ${process.execPath}
  command: node trainer.mjs --steps 4 --step-ms 50
  time_budget: 2m
  first_signal_timeout: 1m
  gpus: 0
  blueprint:
    worker: { poll_interval: 200ms, heartbeat_interval: 2s, stall_timeout: 1m, grace_period: 2s, lease_ttl: 30s }
knobs:
  lr: [0.1, 0.01]
seeds: 1
budgets: { stages: ${options.stages}, experiments: 10 }
---
Does the learning rate change the fixture trainer's final reward?
`;
}
