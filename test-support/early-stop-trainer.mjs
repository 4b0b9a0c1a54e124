#!/usr/bin/env node
// The trainer of the early-stopping topic (test-support/early-stop-topic.ts): verl-style
// metric lines, one per step, for `max_steps` steps (from the A3R_OVERRIDES the worker
// passes). Its reward is flat from the first step and depends only on `lr`: 0.8 at 0.03,
// 0.05 less per decade away up to lr 1, and a hopeless 0.1 above lr 1, so a rung can
// tell the bad configuration apart at once while the good ones stay within 0.1.
//   --step-ms M   time per step (default 150)
const args = process.argv.slice(2);
const index = args.indexOf("--step-ms");
const stepMs = index < 0 ? 150 : Number(args[index + 1]);
const overrides = JSON.parse(process.env.A3R_OVERRIDES ?? "{}");
const lr = Number(overrides.lr ?? 0.03);
const steps = Number(overrides.max_steps ?? 20);
const reward = lr > 1 ? 0.1 : 0.8 - 0.05 * Math.abs(Math.log10(lr / 0.03));

for (let step = 1; step <= steps; step += 1) {
  await new Promise((resolve) => setTimeout(resolve, stepMs));
  console.log(`step:${step} - reward_mean:${reward.toFixed(4)} - loss:${(1 / (step + 1)).toFixed(4)}`);
}
console.log("training finished");
