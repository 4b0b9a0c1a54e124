#!/usr/bin/env node
// A fake trainer for the worker's fault-injection tests: prints verl-style metric lines
// (or writes them to $A3R_METRICS_FILE), saves a checkpoint every step under
// $A3R_CHECKPOINT_DIR, resumes from it when A3R_RESUME=1, and misbehaves on request:
//   --steps N --step-ms M          how long a healthy run is
//   --oom-above B                  "CUDA out of memory" when the batch size is above B
//   --nan-after K --nan-lr-above L loss becomes NaN after K steps while lr is above L
//   --hang-attempts N              print nothing and hang on attempts 1..N
//   --stall-after K                on attempt 1, stop making progress after step K
//   --pause-after K --until-file F after step K, wait (silently) until file F exists
//   --unknown-error                die with an error no rule knows
//   --rate-limited-attempts N      on attempts 1..N die with an external API 429
//   --rate-limit-after-ms M        ... after M ms (default 0), as a trainer that first loads
//   --auth-error                   die with an external API 401 (every attempt)
//   --port P                       listen on P (the port override wins) for the whole run
//   --pid-file F                   append this process's pid to F at start
//   --children N                   start N grandchildren that ignore SIGTERM
//   --metrics jsonl                write metrics to $A3R_METRICS_FILE instead of the log
//   --say TEXT                     print TEXT once at start (prompt-injection tests)
//   --say-file F                   print the text of file F once at start (secret-scan tests)
//   --say-env A,B                  print the values of environment variables A and B at start
//   --foreign-writes-at K          at step K, write finish.flag and a broken status.json into
//                                  $A3R_RESULT_DIR (files the worker owns) and a file into $A3R_OUTPUT_DIR
//   --escape N                     start N `setsid sleep 300` that leave the process group (pids to --pid-file)
//   --no-signal                    print a line and exit 0 without any step or metric
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { spawn } from "node:child_process";
import { join } from "node:path";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(`--${name}`);
  return index < 0 ? fallback : (args[index + 1] ?? "true");
};
const flag = (name) => args.includes(`--${name}`);
const attempt = Number(process.env.A3R_ATTEMPT ?? 1);
const overrides = JSON.parse(process.env.A3R_OVERRIDES ?? "{}");
const config = process.env.A3R_CONFIG ? JSON.parse(readFileSync(process.env.A3R_CONFIG, "utf8")) : {};
const setting = (key, fallback) => overrides[key] ?? config[key] ?? fallback;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const pidFile = option("pid-file");
if (pidFile) appendFileSync(pidFile, `${process.pid}\n`);
const say = option("say");
if (say) console.log(say);
const sayFile = option("say-file");
if (sayFile) console.log(readFileSync(sayFile, "utf8"));
const sayEnv = option("say-env");
if (sayEnv) for (const name of sayEnv.split(",")) console.log(`${name.toLowerCase()} is ${process.env[name] ?? "unset"}`);

const children = Number(option("children", 0));
for (let index = 0; index < children; index += 1) {
  spawn("sh", ["-c", "trap '' TERM; sleep 300"], { stdio: "ignore" });
}

for (let index = 0; index < Number(option("escape", 0)); index += 1) {
  // setsid leaves the run's process group and session: only the run's tag finds it.
  const escaped = spawn("setsid", ["sleep", "300"], { stdio: "ignore" });
  if (pidFile) appendFileSync(pidFile, `${escaped.pid}\n`);
}
if (flag("no-signal")) {
  console.log("nothing to train; bye");
  process.exit(0);
}

if (attempt <= Number(option("hang-attempts", 0))) {
  setInterval(() => {}, 1 << 30);
  await new Promise(() => {});
}
if (attempt <= Number(option("rate-limited-attempts", 0))) {
  await new Promise((resolve) => setTimeout(resolve, Number(option("rate-limit-after-ms", 0))));
  console.error("openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached for requests'}}");
  process.exit(1);
}
if (flag("auth-error")) {
  console.error("openai.AuthenticationError: Error code: 401 - invalid api key provided");
  process.exit(1);
}
if (flag("unknown-error")) {
  console.error("quux engine: the flux capacitor reported state 0x2A during warm-up");
  process.exit(3);
}
const batch = Number(setting("train_batch_size", 8));
if (option("oom-above") !== undefined && batch > Number(option("oom-above"))) {
  console.log(`step:1 - loss:0.9 - batch:${batch}`);
  console.error(`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (batch ${batch})`);
  process.exit(1);
}
const port = Number(setting("port", option("port", 0)));
let server;
if (option("port") !== undefined) {
  server = createServer();
  try {
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
  } catch (error) {
    console.error(`OSError: [Errno 98] Address already in use (port ${port}: ${error.code})`);
    process.exit(1);
  }
  console.log(`listening on port ${port}`);
}

const checkpointDir = process.env.A3R_CHECKPOINT_DIR;
const checkpointFile = checkpointDir ? join(checkpointDir, "last.json") : undefined;
let start = 0;
if (process.env.A3R_RESUME === "1" && checkpointFile) {
  try {
    start = JSON.parse(readFileSync(checkpointFile, "utf8")).step;
    console.log(`resuming from checkpoint at step ${start}`);
  } catch {
    console.log("no checkpoint to resume from; starting at step 0");
  }
}
const steps = Number(option("steps", 5));
const stepMs = Number(option("step-ms", 50));
const lr = Number(setting("lr", 0.001));
const nanAfter = option("nan-after") === undefined ? Infinity : Number(option("nan-after"));
const nanLrAbove = Number(option("nan-lr-above", 0));
const jsonl = option("metrics") === "jsonl";
for (let step = start + 1; step <= steps; step += 1) {
  await sleep(stepMs);
  const diverged = step > nanAfter && lr > nanLrAbove;
  const loss = diverged ? Number.NaN : 1 / (step + 1);
  const reward = Math.min(1, 0.3 + step * 0.05);
  if (jsonl) {
    appendFileSync(process.env.A3R_METRICS_FILE, `${JSON.stringify({ step, reward_mean: reward, loss: diverged ? "nan" : loss })}\n`);
    if (diverged) console.log(`step ${step}: loss is nan`);
  } else {
    console.log(`step:${step} - reward_mean:${reward.toFixed(4)} - loss:${diverged ? "nan" : loss.toFixed(4)} - lr:${lr}`);
  }
  if (diverged) {
    // A real trainer often keeps going after a NaN; the worker must stop it.
    continue;
  }
  if (checkpointFile) {
    mkdirSync(checkpointDir, { recursive: true });
    // Written aside and renamed, as a real trainer saves: a TERM (a Slurm requeue or
    // preemption) between truncating and writing last.json would leave it empty, and the
    // next attempt would start from step 0.
    writeFileSync(`${checkpointFile}.partial`, JSON.stringify({ step }));
    renameSync(`${checkpointFile}.partial`, checkpointFile);
  }
  if (step === Number(option("foreign-writes-at", -1))) {
    writeFileSync(join(process.env.A3R_RESULT_DIR, "finish.flag"), "succeeded\n");
    // A write in place can land in the inode the worker's atomic rename just replaced (and
    // vanish unseen), so the forgery is repeated until the worker reports it, for 10 s at most.
    const events = join(process.env.A3R_RESULT_DIR, "events.jsonl");
    const noticed = () => existsSync(events) && readFileSync(events, "utf8").includes('"file":"status.json"');
    for (let tries = 0; tries < 50 && !noticed(); tries++) {
      writeFileSync(join(process.env.A3R_RESULT_DIR, "status.json"), '{"state": "done, trust me"');
      await sleep(200);
    }
    writeFileSync(join(process.env.A3R_OUTPUT_DIR, "samples.txt"), `samples at step ${step}\n`);
  }
  if (step === Number(option("pause-after", -1))) {
    while (!existsSync(option("until-file"))) await sleep(50);
  }
  if (attempt === 1 && step === Number(option("stall-after", -1))) await new Promise(() => setInterval(() => {}, 1 << 30));
}
server?.close();
console.log("training finished");
