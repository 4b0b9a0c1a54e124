import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { venvMissing, venvPython } from "../../../test-support/python-venv.ts";
import { slowTests, slowTierNote } from "../../../test-support/slow-tests.ts";
import { pythonEnvironment } from "./python-path.ts";
import { TrainerClient } from "./trainer-client.ts";
import { vllmEngineConfigSchema } from "./vllm-config.ts";

/**
 * `trainer.nprocs: 2` starts the persistent trainer under torchrun (the venv's
 * torch.distributed.run, gloo on CPU here): the engine's TrainerClient speaks to rank 0 as
 * to a single trainer. The weights' agreement with one process is checked in
 * swarm/python/tests/test_distributed_trainer.py. Starting the group takes seconds: slow tier.
 */
const missing = venvMissing(["torch"]);

describe.skipIf(missing !== undefined || !slowTests)(`trainer.nprocs${missing ? ` (skipped: ${missing})` : slowTierNote}`, () => {
  let folder: string;
  let tinyModel: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-trainer-nprocs-"));
    tinyModel = join(folder, "tiny");
    const made = spawnSync(venvPython, ["-m", "a3r_swarm.tiny", "init", "--out", tinyModel, "--seed", "0"], {
      env: pythonEnvironment(process.env),
      encoding: "utf8",
    });
    expect(made.status, made.stderr).toBe(0);
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  const config = (trainer: Record<string, unknown>) =>
    vllmEngineConfigSchema.parse({
      kind: "vllm",
      model: tinyModel,
      optimizer: { lr: 0.01, kl_coef: 0, clip: 0.2 },
      experiment_dir: folder,
      python: venvPython,
      trainer,
    });

  it("refuses nprocs beside a command of its own, or a GPU list of another length", () => {
    expect(() => config({ nprocs: 2, command: ["{python}", "-m", "a3r_swarm.trainer"] })).toThrow(/nprocs starts the trainer under torchrun itself/);
    expect(() => config({ nprocs: 2, gpus: [0] })).toThrow(/one GPU per trainer rank: 2 ranks but 1 GPUs listed/);
  });

  it("runs the trainer as a 2-rank torchrun group, rank 0 answering the engine", async () => {
    const parsed = config({ nprocs: 2, device: "cpu", env: { OMP_NUM_THREADS: "1" } });
    expect(parsed.trainer.command).toEqual(["{python}", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "a3r_swarm.trainer"]);
    const client = new TrainerClient(parsed);
    try {
      const loaded = await client.start();
      expect(loaded).toMatchObject({ world_size: 2, strategy: "ddp", device: "cpu" });
    } finally {
      await client.stop();
    }
    // Both ranks logged to the trainer's log; only rank 0's answers reached the engine.
    const log = await readFile(join(folder, "logs", "trainer.log"), "utf8");
    expect(log).toMatch(/rank 1 exiting/);
  }, 180_000);
});
