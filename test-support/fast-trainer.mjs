#!/usr/bin/env node
// The trainer of the fast fixture topic (test-support/fast-topic.ts): a few steps of
// verl-style metric lines in about a second. Its final reward is a pure function of the
// `lr` override (best near lr = 0.03, falling with the distance in decades) plus a small
// per-seed offset, so the heuristic planner sees seed noise but the same numbers every
// time: a screen, then one refinement stage.
//   --steps N --step-ms M   how long the run is (default 5 × 200 ms)
//
// Every start appends one line `{"pid":..., "attempt":...}` to trainer-starts.jsonl in
// $A3R_RESULT_DIR: evidence, written by the run itself, of how often it was launched.
import { appendFileSync } from "node:fs";
import { join } from "node:path";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(args[index + 1]);
};
const steps = option("steps", 5);
const stepMs = option("step-ms", 200);
const overrides = JSON.parse(process.env.A3R_OVERRIDES ?? "{}");
const lr = Number(overrides.lr ?? 0.1);
const seed = Number(overrides.seed ?? 1);

if (process.env.A3R_RESULT_DIR) {
  appendFileSync(
    join(process.env.A3R_RESULT_DIR, "trainer-starts.jsonl"),
    `${JSON.stringify({ pid: process.pid, attempt: Number(process.env.A3R_ATTEMPT ?? 1) })}\n`,
  );
}

function finalReward(lr, seed) {
  return 0.8 - 0.1 * Math.abs(Math.log10(lr / 0.03)) + 0.001 * (seed - 1.5);
}

const final = finalReward(lr, seed);
for (let step = 1; step <= steps; step += 1) {
  await new Promise((resolve) => setTimeout(resolve, stepMs));
  // Rises to `final` at the last step, so the final, best and area scores agree on the order.
  const reward = final * (0.5 + (0.5 * step) / steps);
  console.log(`step:${step} - reward_mean:${reward.toFixed(4)} - loss:${(1 / (step + 1)).toFixed(4)} - lr:${lr}`);
}
console.log("training finished");
