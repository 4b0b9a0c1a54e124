import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import itemColor, { prompt } from "../examples/tasks/item-color/task.ts";
import type { TrainingSample } from "../swarm/engines/port/engine.ts";
import { vllmEngineConfigSchema } from "../swarm/engines/vllm/vllm-config.ts";
import { pythonEnvironment } from "../swarm/engines/vllm/python-path.ts";
import { TrainerClient } from "../swarm/engines/vllm/trainer-client.ts";
import { VllmEngine } from "../swarm/engines/vllm/vllm-engine.ts";
import type { Benchmark, BenchRow } from "./report.ts";

/**
 * The real-model path on CPU with the tiny model (swarm/python): the persistent trainer's
 * step (tokens/s, seconds) against a fresh trainer process per step on the same batch (what
 * a per-step `trainerCommand` costs: start Python, import torch, load the model, then the
 * step), and weight sync: from the trainer's answer to the first completion served with
 * the new adapter. Batches are real: 16 item-color episodes sampled from the reference
 * server, so token ids and behaviour log-probs are what training sees in a run.
 */
const python = process.env.A3R_BENCH_PYTHON ?? "/usr/bin/python3";
const steps = Number(process.env.A3R_BENCH_TRAINER_STEPS ?? 6);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const benchmark: Benchmark = {
  title: "Persistent trainer and weight sync (tiny model, CPU)",
  async run() {
    if (spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status !== 0) {
      return { title: benchmark.title, rows: [], notes: [`skipped: ${python} cannot import torch (apt-get install python3-torch)`] };
    }
    const directory = await mkdtemp(join(tmpdir(), "a3r-bench-trainer-"));
    try {
      const model = join(directory, "tiny");
      spawnSync(python, ["-m", "a3r_swarm.tiny", "init", "--out", model, "--seed", "0"], { env: pythonEnvironment(process.env), stdio: "ignore" });
      const config = vllmEngineConfigSchema.parse({
        kind: "vllm",
        model,
        python,
        optimizer: { lr: 0.01, kl_coef: 0, clip: 0.2 },
        experiment_dir: join(directory, "experiment"),
        inference: { server: "reference", startTimeoutMs: 120_000 },
        trainer: { device: "cpu" },
      });
      const engine = new VllmEngine(config);
      await engine.load();
      const batch: TrainingSample[] = [];
      for (let group = 0; group < 4; group++) {
        const task = itemColor.sampleTask(group);
        for (let repeat = 0; repeat < 4; repeat++) {
          const answer = await engine.generate({ messages: prompt(task as never), maxTokens: 3, temperature: 1 });
          const tokenIds = [...answer.promptTokenIds, ...answer.completionTokenIds];
          batch.push({
            taskId: task.taskId,
            episodeUuid: `bench-${group}-${repeat}`,
            tokenIds,
            lossMask: tokenIds.map((_, index) => (index >= answer.promptTokenIds.length ? 1 : 0)),
            logprobs: tokenIds.map((_, index) =>
              index >= answer.promptTokenIds.length ? answer.completionLogprobs?.[index - answer.promptTokenIds.length] : undefined,
            ),
            reward: repeat % 2,
          });
        }
      }
      const persistent: number[] = [];
      const tokensPerSecond: number[] = [];
      const syncMs: number[] = [];
      for (let step = 1; step <= steps; step++) {
        const started = performance.now();
        const { metrics } = await engine.train(batch, step);
        const trained = performance.now();
        await engine.generate({ messages: prompt(itemColor.sampleTask(0) as never), maxTokens: 3 });
        persistent.push((trained - started) / 1000);
        tokensPerSecond.push(metrics.tokens_per_s ?? Number.NaN);
        syncMs.push((metrics.weight_sync_ms ?? 0) + (performance.now() - trained));
      }
      await engine.close();

      // The same batch, a fresh trainer process per step (start, load, one step, exit).
      const batchFile = join(directory, "batch.jsonl");
      await writeFile(batchFile, `${batch.map((sample) => JSON.stringify(sample)).join("\n")}\n`);
      const fresh: number[] = [];
      for (let step = 1; step <= Math.max(2, Math.floor(steps / 2)); step++) {
        const started = performance.now();
        const trainer = new TrainerClient({ ...config, experiment_dir: join(directory, `fresh-${step}`) });
        await trainer.start();
        await trainer.request({ op: "train", batch_file: batchFile, step, output_dir: join(directory, `fresh-${step}`, "adapter") });
        await trainer.stop();
        fresh.push((performance.now() - started) / 1000);
      }
      const rows: BenchRow[] = [
        { name: "persistent trainer: step (median)", value: median(persistent), unit: "s" },
        { name: "persistent trainer: tokens/s (median)", value: median(tokensPerSecond), unit: "tok/s" },
        { name: "fresh process per step: step (median)", value: median(fresh), unit: "s" },
        {
          name: "fresh / persistent step time",
          value: median(fresh) / median(persistent),
          unit: "x",
          goal: ">= 3",
          met: median(fresh) / median(persistent) >= 3,
        },
        { name: "weight sync: trainer answer → first completion on the new adapter (median)", value: median(syncMs), unit: "ms" },
      ];
      return {
        title: benchmark.title,
        rows,
        notes: [`${steps} persistent steps on 16 episodes; the fresh path cannot even keep the previous adapter (it starts from the base model each time)`],
      };
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  },
};

export default benchmark;
