#!/usr/bin/env node
// A fake trainer whose output is hostile to a log reader (the worker's log-flood tests,
// worker/log-floods.int.test.ts, and bench/log-reading.bench.ts). It prints verl-style
// metric lines `step:N - reward_mean:R - loss:L` on stdout, and around them, on request:
//   --steps N --step-ms M            how long the run is (default 10 steps of 20 ms)
//   --flood-after K --flood-mb X     after step K, X MB of short debug lines at once
//   --noise-kb X                     before every step, X KB of debug lines (a trainer that writes MB/s)
//   --long-line-mb X                 before every step, an X MB line without a newline (a dumped array),
//                                    so the step's line starts after it
//   --garbage-mb X                   after step 1, X MB of random binary bytes (a dumped tensor)
//   --tqdm                           a tqdm-style progress bar on stderr (`\r`, no newline) before each step
//   --cr-mb X                        after step 1, X MB of `\r` and nothing else
//   --dump-after K --dump-mb X       after step K, one X MB dump (lines), then the rest at full speed
//   --oom-attempts N --burst-mb X    on attempts 1..N: step 1, then X MB of debug lines, then a CUDA
//     --traceback-lines T            OOM followed by T lines of other ranks' tracebacks; exit 1
import { randomBytes } from "node:crypto";
import { writeSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(args[index + 1]);
};
const flag = (name) => args.includes(`--${name}`);
const attempt = Number(process.env.A3R_ATTEMPT ?? 1);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const MB = 1 << 20;

// Straight to the file descriptors: the log is a file, each write lands whole and at once.
const out = (text) => writeSync(1, text);
const err = (text) => writeSync(2, text);

/** About `bytes` of short debug lines (whole lines), written in 1 MB pieces. */
function debugLines(bytes, write = out) {
  const line = "debug: grad stats mean=0.00012 std=0.98 max=4.2 (layer 17, rank 0)\n";
  const perPiece = Math.ceil(MB / line.length);
  const piece = line.repeat(perPiece);
  for (let left = Math.ceil(bytes / line.length); left > 0; left -= perPiece) write(left >= perPiece ? piece : line.repeat(left));
}

const steps = option("steps", 10);
const stepMs = option("step-ms", 20);
const metricLine = (step) => `step:${step} - reward_mean:${Math.min(1, 0.3 + step * 0.05).toFixed(4)} - loss:${(1 / (step + 1)).toFixed(4)}\n`;

if (attempt <= option("oom-attempts", 0)) {
  out(metricLine(1));
  debugLines(option("burst-mb", 0) * MB);
  err("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB\n");
  for (let index = 0; index < option("traceback-lines", 0); index += 1)
    err(`[rank${1 + (index % 7)}]:   File "/opt/train/fsdp_workers.py", line ${100 + index}, in update_actor\n`);
  process.exit(1);
}

for (let step = 1; step <= steps; step += 1) {
  await sleep(stepMs);
  const noise = option("noise-kb", 0);
  if (noise > 0) debugLines(noise * 1024);
  const longLine = option("long-line-mb", 0);
  if (longLine > 0) out("[0.125, 0.25, 0.5]".repeat(Math.ceil((longLine * MB) / 18)));
  if (flag("tqdm"))
    err(`\r${Math.round((100 * step) / steps)}%|${"█".repeat(step)}${" ".repeat(steps - step)}| ${step}/${steps} [00:0${step}<00:01, 9.52it/s]`);
  out(metricLine(step));
  if (step === option("flood-after", -1)) debugLines(option("flood-mb", 0) * MB);
  if (step === option("dump-after", -1)) debugLines(option("dump-mb", 0) * MB, err);
  if (step === 1 && option("garbage-mb", 0) > 0) {
    for (let left = option("garbage-mb", 0) * MB; left > 0; left -= MB) writeSync(1, randomBytes(Math.min(MB, left)));
    out("\n");
  }
  if (step === 1 && option("cr-mb", 0) > 0) {
    const crs = "\r".repeat(MB);
    for (let left = option("cr-mb", 0); left > 0; left -= 1) out(crs);
  }
}
out("training finished\n");
