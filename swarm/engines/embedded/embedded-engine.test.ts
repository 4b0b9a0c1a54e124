import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeEngineConformance } from "../engine-conformance.test-support.ts";
import { createEngine, engineConfigSchema } from "../index.ts";
import { EmbeddedEngine } from "./embedded-engine.ts";

describeEngineConformance("embedded (training in a worker thread)", async () => {
  const experimentDir = await mkdtemp(join(tmpdir(), "a3r-embedded-"));
  const engine = await createEngine({ kind: "embedded", seed: 3, optimizer: { lr: 0.2, kl_coef: 0.001, clip: 0.2 }, experiment_dir: experimentDir });
  await engine.load();
  return {
    engine,
    cleanup: async () => {
      await engine.close();
      await rm(experimentDir, { recursive: true, force: true });
    },
  };
});

describe("embedded engine", () => {
  const config = { kind: "embedded" as const, seed: 5, optimizer: { lr: 0.2, kl_coef: 0.01, clip: 0.2 }, experiment_dir: "unused" };

  it("gives the same weights whether the step runs in the worker thread or inline", async () => {
    const inThread = new EmbeddedEngine({ ...config, embedded: { train_off_thread: false } });
    const offThread = new EmbeddedEngine(config);
    await inThread.load();
    await offThread.load();
    const messages = [{ role: "user" as const, content: "What colour is the sky?" }];
    const samples = [];
    for (let index = 0; index < 6; index++) {
      const result = await inThread.generate({ messages, maxTokens: 3, seed: index });
      samples.push({
        taskId: "sky",
        episodeUuid: `e${index}`,
        tokenIds: [...result.promptTokenIds, ...result.completionTokenIds],
        lossMask: [...result.promptTokenIds.map(() => 0), ...result.completionTokenIds.map(() => 1)],
        reward: index % 3 === 0 ? 1 : 0,
      });
    }
    const inline = await inThread.train(samples, 1);
    const worker = await offThread.train(samples, 1);
    const { step_time_ms: _a, ...inlineMetrics } = inline.metrics;
    const { step_time_ms: _b, ...workerMetrics } = worker.metrics;
    expect(workerMetrics).toEqual(inlineMetrics);
    expect(inlineMetrics.advantage_nonzero_fraction).toBe(1);
    const probe = { messages, maxTokens: 4, seed: 99 };
    expect((await offThread.generate(probe)).completionLogprobs).toEqual((await inThread.generate(probe)).completionLogprobs);
    await offThread.close();
  });

  it("keeps answering generate while a training step runs", async () => {
    const engine = new EmbeddedEngine(config);
    await engine.load();
    const messages = [{ role: "user" as const, content: "What colour is the sky?" }];
    const result = await engine.generate({ messages, maxTokens: 3, seed: 1 });
    const sample = {
      taskId: "sky",
      episodeUuid: "e",
      tokenIds: [...result.promptTokenIds, ...result.completionTokenIds],
      lossMask: [...result.promptTokenIds.map(() => 0), ...result.completionTokenIds.map(() => 1)],
      reward: 1,
    };
    const training = engine.train(
      Array.from({ length: 400 }, (_, index) => ({ ...sample, episodeUuid: `e${index}`, reward: index % 2 })),
      1,
    );
    const during = await engine.generate({ messages, maxTokens: 3, seed: 1 });
    expect(during.text).toBe(result.text);
    await training;
    await engine.close();
  });

  it("restores the engine's own random stream, so unseeded sampling continues identically", async () => {
    const directory = await mkdtemp(join(tmpdir(), "a3r-embedded-checkpoint-"));
    try {
      const engine = new EmbeddedEngine({ ...config, embedded: { train_off_thread: false } });
      await engine.load();
      const request = { messages: [{ role: "user" as const, content: "What colour is the snow?" }], maxTokens: 5 };
      await engine.generate(request);
      const path = await engine.save(directory, 7);
      const continued = [await engine.generate(request), await engine.generate(request)].map((result) => result.text);
      expect(continued[0]).not.toBe(continued[1]);
      expect(await engine.restore(path)).toBe(7);
      expect([await engine.generate(request), await engine.generate(request)].map((result) => result.text)).toEqual(continued);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("refuses to restore a checkpoint of another vocabulary with a message naming the file", async () => {
    const directory = await mkdtemp(join(tmpdir(), "a3r-embedded-checkpoint-"));
    try {
      const small = new EmbeddedEngine({ ...config, embedded: { vocabulary: ["yes", "no"], train_off_thread: false } });
      await small.load();
      const path = await small.save(directory, 3);
      const other = new EmbeddedEngine({ ...config, embedded: { train_off_thread: false } });
      await other.load();
      await expect(other.restore(path)).rejects.toThrow(/meta\.json: vocabulary or feature_bits differ/);
      await expect(other.restore(join(directory, "missing"))).rejects.toThrow(/no embedded checkpoint/);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("warns about tools it ignores and samples greedily at temperature 0", async () => {
    const engine = new EmbeddedEngine({ ...config, embedded: { train_off_thread: false } });
    await engine.load();
    const result = await engine.generate({ messages: [{ role: "user", content: "hi" }], tools: [{ type: "function" }], temperature: 0, maxTokens: 2 });
    expect(result.warnings).toEqual(["tools"]);
    // The untrained policy is uniform, so greedy picks the first output: end-of-turn.
    expect(result.completionTokenIds).toEqual([4]);
    expect(result.text).toBe("");
  });

  it("rejects unknown configuration keys", () => {
    expect(engineConfigSchema.safeParse({ ...config, optimiser: {} }).success).toBe(false);
    expect(engineConfigSchema.safeParse({ ...config, embedded: { vocab: [] } }).success).toBe(false);
    expect(engineConfigSchema.safeParse(config).success).toBe(true);
  });
});
