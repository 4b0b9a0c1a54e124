// A trainer that diverges the way real ones do, for the NaN recovery tests: it logs
// `step:N - loss:X - grad_norm:Y - lr:Z`, writes a checkpoint named by its step after every
// step, the NaN step included (so resuming from "the latest" would resume the divergence),
// and resumes from the newest `step-N.json` when A3R_RESUME=1.
//   --steps N          train to step N
//   --nan-after K      loss is NaN after step K while lr is above --nan-lr-above L
//   --grad-nan-at G    grad_norm is NaN at step G only (a harmless spike the optimizer clips)
//   --step-ms MS       time per step
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(`--${name}`);
  return index < 0 ? fallback : args[index + 1];
};
const overrides = JSON.parse(process.env.A3R_OVERRIDES ?? "{}");
const lr = Number(overrides.lr ?? 0.001);
const steps = Number(option("steps", 6));
const nanAfter = Number(option("nan-after", Infinity));
const nanLrAbove = Number(option("nan-lr-above", 0));
const gradNanAt = Number(option("grad-nan-at", -1));
const stepMs = Number(option("step-ms", 60));
const dir = process.env.A3R_CHECKPOINT_DIR;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let start = 0;
if (process.env.A3R_RESUME === "1" && dir) {
  const dated = readdirSync(dir, { withFileTypes: true })
    .map((entry) => /^step-(\d+)\.json$/.exec(entry.name))
    .filter((match) => match !== null)
    .map((match) => Number(match[1]));
  if (dated.length > 0) start = Math.max(...dated);
  console.log(`resuming from step ${start}`);
}
for (let step = start + 1; step <= steps; step += 1) {
  await sleep(stepMs);
  const diverged = step > nanAfter && lr > nanLrAbove;
  const loss = diverged ? "nan" : (1 / (step + 1)).toFixed(4);
  const gradNorm = step === gradNanAt ? "nan" : "0.5000";
  console.log(`step:${step} - loss:${loss} - grad_norm:${gradNorm} - reward_mean:${(0.3 + step * 0.05).toFixed(4)} - lr:${lr}`);
  if (dir) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `step-${step}.json`), JSON.stringify({ step, diverged }));
  }
}
