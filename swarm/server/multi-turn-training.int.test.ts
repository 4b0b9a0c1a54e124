import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess, temporaryDirectory, type ServerProcess } from "./server-process.test-support.ts";

/**
 * The multi-turn example task through the real server and a real `a3r swarm client`
 * process: each episode makes three chat calls whose messages extend each other, so the
 * server must merge them into one sample per episode, and the policy must still learn
 * (chance is about 1 %; the reward goal of the task is 0.8).
 */
const cli = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));
const run = promisify(execFile);
let server: ServerProcess | undefined;
let directory: { path: string; remove(): Promise<void> } | undefined;

afterAll(async () => {
  await server?.kill();
  await directory?.remove();
});

describe("multi-turn training end to end", () => {
  it.skipIf(!slowTests)(
    `merges each compass-walk episode into one sample and learns the task to the reward goal${slowTierNote}`,
    async () => {
      directory = await temporaryDirectory("swarm-multi-turn");
      const experimentDir = join(directory.path, "experiment");
      server = await startServerProcess(
        directory.path,
        ["train_batch_size: 8", "num_repeat: 8", "save_freq: 0", "max_steps: 70", `experiment_dir: ${experimentDir}`].join("\n"),
      );
      const { stdout } = await run(
        process.execPath,
        [cli, "swarm", "client", "compass-walk", "--url", server.url, "--episodes", "20000", "--concurrency", "16", "--json"],
        {
          env: { ...process.env, NO_COLOR: "1" },
          timeout: 180_000,
        },
      );
      const summary = JSON.parse(stdout) as { failed: number; stoppedEarly?: string };
      expect(summary.failed).toBe(0);
      expect(summary.stoppedEarly).toContain("max_steps (70)");

      const steps = (await readFile(join(experimentDir, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, number>);
      expect(steps).toHaveLength(70);
      for (const step of steps) {
        expect(step.samples).toBe(step.episodes); // however many calls, one merged sample
        expect(step.merge_ratio).toBeLessThanOrEqual(1);
      }
      // Once the policy walks all three turns, merging saves the replayed history.
      expect(Math.max(...steps.slice(-5).map((step) => step.merge_ratio!))).toBeLessThan(0.6);
      const levels = steps.map((step) => step.rollout_reward_mean ?? Number.NaN).filter(Number.isFinite);
      expect(Math.max(...levels.slice(0, 3))).toBeLessThan(0.2);
      const lastFive = levels.slice(-5);
      expect(lastFive.reduce((sum, level) => sum + level, 0) / lastFive.length).toBeGreaterThanOrEqual(0.8);
    },
    240_000,
  );
});
