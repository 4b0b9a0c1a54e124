import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { topicTextWithAbsolutePaths } from "../leader/domain/topic-paths.ts";
import { runA3r } from "../test-support/run-cli.ts";
import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";

/**
 * `a3r research` on the temperature example (examples/topics/embedded-temperature.md), made
 * tiny, with real workers and swarm servers on this machine: temperature changes how the
 * training reward is sampled, so the leader plans a fixed-protocol evaluation into every
 * run, the runs record it, the verdicts are computed on it, and the report says so.
 */
const root = join(import.meta.dirname, "..");

describe.skipIf(!slowTests)(`a3r research on a knob that changes the measurement${slowTierNote}`, () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-measurement-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("compares temperature runs on fixed-protocol eval episodes and says so", async () => {
    const example = join(root, "examples/topics/embedded-temperature.md");
    const text = topicTextWithAbsolutePaths(await readFile(example, "utf8"), example)
      .replace("overrides: { max_steps: 20 }", "overrides: { max_steps: 4 }")
      .replace("seeds: 2", "seeds: 1")
      .replace("time_budget: 10m", "time_budget: 5m")
      .replace("budgets: { stages: 3, experiments: 12, wall_time: 30m }", "budgets: { stages: 1, experiments: 2, wall_time: 20m }")
      .replace(/hosts: .*\n/, "");
    expect(text).toContain("max_steps: 4 ");
    const topic = join(dir, "temperature.md");
    await writeFile(topic, text);
    const runsDir = join(dir, "runs");
    const research = await runA3r(["research", topic, "--runs-dir", runsDir, "--campaign", "temp", "--planner", "heuristic"], { timeoutMs: 240_000 });
    // One stage of one seed answers nothing; the runs and the report are what is checked.
    expect(research.stdout + research.stderr).toMatch(/stopped: budget - stage 2 would exceed the budget of 1 stage/);
    const campaign = join(runsDir, "temp");
    const blueprints = await readdir(join(campaign, "stages", "1", "blueprints"));
    expect(blueprints).toHaveLength(2);
    for (const file of blueprints) {
      const blueprint = await readFile(join(campaign, "stages", "1", "blueprints", file), "utf8");
      expect(blueprint).toMatch(/metric:\n\s+name: protocol_eval_reward_mean/);
      expect(blueprint).toMatch(/eval_protocol\.every: 1/);
      expect(blueprint).toMatch(/eval_protocol\.sampling\.temperature: 1/);
      const id = file.replace(/\.md$/, "");
      const metrics = (await readFile(join(campaign, "results", id, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as Record<string, number>);
      const evaluated = metrics.filter((record) => typeof record.protocol_eval_reward_mean === "number");
      expect(evaluated.map((record) => record.step)).toEqual([1, 2, 3, 4]);
      expect(evaluated.every((record) => record.protocol_eval_episodes === 64)).toBe(true);
    }
    const report = await readFile(join(campaign, "report.md"), "utf8");
    expect(report).toMatch(/compared on protocol_eval_reward_mean, not rollout_reward_mean: 64 fixed-protocol eval episodes after steps 1, 2, 3, 4/);
    expect(report).toContain("temperature (sampling.temperature: the reward of a train episode is sampled at this temperature");
  }, 300_000);
});
