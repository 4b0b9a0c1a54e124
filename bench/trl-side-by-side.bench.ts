import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { venvMissing, venvPython } from "../test-support/python-venv.ts";
import type { Benchmark, BenchRow } from "./report.ts";

/**
 * a3r's trainer against TRL's GRPOTrainer, side by side in one run on CPU
 * (bench/trl-side-by-side.py): the random tiny Qwen2 with Qwen's real tokenizer, the same
 * task, group size, batch, lr, LoRA rank and steps. Also the trainer's step on one batch
 * with logits for the trained positions only against logits for every position (the path
 * before), peak memory, and adapter disk use. Needs the .venv (torch, transformers, peft,
 * trl); skipped, saying why, without it.
 */
const steps = Number(process.env.A3R_BENCH_TRL_STEPS ?? 12);
const script = join(import.meta.dirname, "trl-side-by-side.py");

interface RunSummary {
  reward_curve: number[];
  trained_tokens_per_s: number;
  trained_tokens_per_cpu_s: number;
  wall_seconds_per_step: number;
}
interface SideBySide {
  a3r: RunSummary;
  trl: RunSummary;
  ratio_trained_tokens_per_s: number;
  ratio_trained_tokens_per_cpu_s: number;
  ratio_wall_per_step: number;
}
interface LogitsRun {
  cpu_seconds_mean: number;
  peak_rss_mb: number;
  adapter_mb: number;
  adapter_with_embeddings_mb: number;
  adapters_disk_mb: number;
  kept_adapters: string[];
}
interface Logits {
  selected: LogitsRun;
  full: LogitsRun;
  speedup: number;
  steps: number;
}

function runPython(mode: string, stepCount: number, json: string): Promise<{ code: number | null; log: string }> {
  return new Promise((resolve) => {
    const child = spawn(venvPython, [script, mode, "--steps", String(stepCount), "--json", json], { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    child.stderr.on("data", (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4000);
    });
    child.once("exit", (code) => resolve({ code, log }));
  });
}

function curve(values: number[]): string {
  return values.map((value) => value.toFixed(2)).join(" ");
}

const benchmark: Benchmark = {
  title: "a3r trainer vs TRL GRPOTrainer (tiny Qwen2, real tokenizer, CPU)",
  async run() {
    const missing = venvMissing(["torch", "transformers", "peft", "trl", "datasets"]);
    if (missing) return { title: benchmark.title, rows: [], notes: [`skipped: ${missing}`] };
    const directory = await mkdtemp(join(tmpdir(), "a3r-bench-trl-"));
    try {
      const logitsJson = join(directory, "logits.json");
      const logitsRun = await runPython("logits", 3, logitsJson);
      if (logitsRun.code !== 0) return { title: benchmark.title, rows: [], notes: [`logits run failed: ${logitsRun.log}`] };
      const logits = JSON.parse(await readFile(logitsJson, "utf8")) as Logits;
      const sideJson = join(directory, "side.json");
      const sideRun = await runPython("trl", steps, sideJson);
      if (sideRun.code !== 0) return { title: benchmark.title, rows: [], notes: [`side-by-side run failed: ${sideRun.log}`] };
      const side = JSON.parse(await readFile(sideJson, "utf8")) as SideBySide;
      const rows: BenchRow[] = [
        { name: "step CPU time, trained positions' logits only", value: logits.selected.cpu_seconds_mean, unit: "s" },
        { name: "step CPU time, every position's logits (before)", value: logits.full.cpu_seconds_mean, unit: "s" },
        { name: "before / now step CPU time", value: logits.speedup, unit: "x", goal: ">= 1", met: logits.speedup >= 1 },
        { name: "peak RSS now / before", value: logits.selected.peak_rss_mb / logits.full.peak_rss_mb, unit: "x" },
        { name: "adapter without / with frozen embeddings", value: logits.selected.adapter_mb / logits.selected.adapter_with_embeddings_mb, unit: "x" },
        { name: `adapters on disk after ${logits.steps} steps`, value: logits.selected.adapters_disk_mb, unit: "MB" },
        { name: "a3r train step: trained tokens/s", value: side.a3r.trained_tokens_per_s, unit: "tok/s" },
        { name: "TRL train step: trained tokens/s", value: side.trl.trained_tokens_per_s, unit: "tok/s" },
        {
          name: "a3r / TRL trained tokens/s",
          value: side.ratio_trained_tokens_per_s,
          unit: "x",
          goal: ">= 1",
          met: side.ratio_trained_tokens_per_s >= 1,
        },
        { name: "a3r / TRL trained tokens per CPU second", value: side.ratio_trained_tokens_per_cpu_s, unit: "x" },
        { name: "a3r / TRL wall time per step", value: side.ratio_wall_per_step, unit: "x", goal: "<= 1", met: side.ratio_wall_per_step <= 1 },
      ];
      return {
        title: benchmark.title,
        rows,
        notes: [
          `a3r reward curve: ${curve(side.a3r.reward_curve)}`,
          `TRL reward curve: ${curve(side.trl.reward_curve)}`,
          `${steps} steps of 8 prompts x 4, 16-token completions, LoRA rank 8 on every projection + lm_head, lr 0.05; tokens/s over the faster half of the steps (shared machine)`,
          `kept adapter folders: ${logits.selected.kept_adapters.join(", ")}`,
        ],
      };
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  },
};

export default benchmark;
