import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

/**
 * A research topic over the fixture trainer (worker/__fixtures__/trainer.mjs): one knob,
 * two values, one seed, runs that finish in a second. For leader and CLI tests.
 */
export function fixtureTopicText(options: { stages: number; title?: string }): string {
  return trainerTopicText({
    title: options.title ?? "Does lr change the fixture trainer's reward?",
    codebase: join(root, "worker/__fixtures__"),
    command: "node trainer.mjs --steps 4 --step-ms 50",
    seeds: 1,
    stages: options.stages,
    experiments: 10,
    question: "Does the learning rate change the fixture trainer's final reward?",
  });
}

/**
 * The topic text the test fixtures share: a classic base experiment over a trainer that
 * logs `reward_mean`, quick worker settings, no GPU, and one knob (lr 0.1 or 0.01).
 */
export function trainerTopicText(topic: {
  title: string;
  codebase: string;
  command: string;
  seeds: number;
  stages: number;
  experiments: number;
  question: string;
}): string {
  return `---
title: ${topic.title}
metric: { name: reward_mean, goal: maximize, score: final }
base:
  mode: classic
  codebase: ${topic.codebase}
  interpreter: ${process.execPath}
  command: ${topic.command}
  time_budget: 2m
  first_signal_timeout: 1m
  gpus: 0
  blueprint:
    worker: { poll_interval: 200ms, heartbeat_interval: 2s, stall_timeout: 1m, grace_period: 2s, lease_ttl: 30s }
knobs:
  lr: [0.1, 0.01]
seeds: ${topic.seeds}
budgets: { stages: ${topic.stages}, experiments: ${topic.experiments} }
leader: { poll_interval: 200ms }
---
${topic.question}
`;
}
