#!/usr/bin/env node
// Prints a failure line a real stack prints and exits with its code, as a step before the
// fixture trainer (`node fail-with.mjs ... && node trainer.mjs ...`):
//   --text T            the line (to stderr)
//   --exit N            the exit code (default 1)
//   --batch-above B     only while the batch (train_batch_size: overrides, then the config copy) is above B
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(`--${name}`);
  return index < 0 ? fallback : (args[index + 1] ?? fallback);
};
const overrides = JSON.parse(process.env.A3R_OVERRIDES ?? "{}");
const config = process.env.A3R_CONFIG ? JSON.parse(readFileSync(process.env.A3R_CONFIG, "utf8")) : {};
const batch = Number(overrides.train_batch_size ?? config.train_batch_size ?? 8);
const above = option("batch-above");
if (above === undefined || batch > Number(above)) {
  console.error(option("text", "failed"));
  process.exit(Number(option("exit", 1)));
}
