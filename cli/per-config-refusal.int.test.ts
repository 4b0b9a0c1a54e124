import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../campaign/index.ts";
import { runA3r } from "../test-support/run-cli.ts";
import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";

/**
 * Per-configuration refusal in a real campaign on the embedded swarm engine: a topic that
 * lists `clip: 5` (the engine takes at most 1) beside a valid lr. The clip-5 configuration
 * is dropped with the engine's reason in the stage plan, in events.jsonl and in the report;
 * the baseline and lr-0.05 still run and are compared, and the campaign exits 0. A topic
 * whose only alternative is out of range cannot answer, and exits 1.
 */
const repository = resolve(import.meta.dirname, "..");

const swarmYaml = [
  "model: { kind: embedded, seed: 1 }",
  "train_batch_size: 4",
  "num_repeat: 2",
  "max_steps: 2",
  "save_freq: 1",
  "episode_idle_timeout: 30",
].join("\n");
const client = "node bin/a3r.js swarm client item-color --url {swarm_url} --episodes 2000 --concurrency 4";

function topic(config: string, knobs: string, title: string): string {
  return `---
title: ${title}
metric: { name: rollout_reward_mean, goal: maximize, score: final }
base:
  mode: swarm
  codebase: ${repository}
  interpreter: node
  config: ${config}
  command: ${client}
  time_budget: 3m
  first_signal_timeout: 2m
  gpus: 0
  blueprint:
    worker: { poll_interval: 200ms, heartbeat_interval: 2s, stall_timeout: 2m, grace_period: 2s, lease_ttl: 30s }
knobs:
${knobs}
seeds: 1
budgets: { stages: 1, experiments: 4 }
review: false
leader: { poll_interval: 200ms }
---
Does clipping matter for the reward?
`;
}

describe("a configuration the engine refuses is dropped, and the campaign goes on", () => {
  let dir: string;
  let config: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-refusal-"));
    config = join(dir, "swarm.yaml");
    await writeFile(config, swarmYaml);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.skipIf(!slowTests)(
    `clip 5 is left out with its reason in the plan and the report; baseline and lr-0.05 run and are compared; exit 0${slowTierNote}`,
    async () => {
      const topicFile = join(dir, "clip.md");
      await writeFile(topicFile, topic(config, "  lr: [0.3, 0.05]\n  clip: [1, 5]", "Clip refusal"));
      const runsDir = join(dir, "runs");
      const research = await runA3r(["research", topicFile, "--runs-dir", runsDir, "--campaign", "clip", "--planner", "heuristic"], { timeoutMs: 240_000 });
      expect(research.stderr).not.toMatch(/stopped: audit-failed/);
      expect(research.code, research.stderr).toBe(0);
      const campaign = join(runsDir, "clip");
      expect((await readdir(join(campaign, "results"))).sort()).toEqual(["s1-baseline-seed1", "s1-lr-0.05-seed1"]);
      const plan = await readFile(join(campaign, "stages", "1", "plan.md"), "utf8");
      expect(plan).toMatch(
        /refused before running, outside what the engine accepts: clip-5 \(override clip=5 \(config field optimizer\.clip\) fails the engine's schema/,
      );
      const { events } = await readEvents(join(campaign, "events.jsonl"));
      expect(events.filter((event) => event.kind === "configuration.refused")).toMatchObject([
        { stage: 1, configurationId: "clip-5", settings: { lr: 0.3, clip: 5 } },
      ]);
      const report = await readFile(join(campaign, "report.md"), "utf8");
      expect(report).toMatch(/Left out before running, outside what the engine accepts .*: clip-5 \(lr=0\.3, clip=5\) in stage 1: override clip=5/);
      expect(report).toContain("s1-lr-0.05-seed1");
    },
    300_000,
  );

  it("a topic whose only alternative is refused cannot answer: it stops before running anything and exits 1", async () => {
    const topicFile = join(dir, "only-clip.md");
    await writeFile(topicFile, topic(config, "  clip: [1, 5]", "Only clip"));
    const runsDir = join(dir, "runs-only");
    const research = await runA3r(["research", topicFile, "--runs-dir", runsDir, "--campaign", "only", "--planner", "heuristic"], { timeoutMs: 120_000 });
    expect(research.stderr).toMatch(
      /stopped: audit-failed - stage 1: clip-5 refused \(override clip=5 .*\); only baseline is left, with nothing to compare it with/,
    );
    expect(research.code).toBe(1);
    const { events } = await readEvents(join(runsDir, "only", "events.jsonl"));
    expect(events.some((event) => event.kind === "run.dispatched" || event.kind === "run.launched" || event.kind === "stage.dispatched")).toBe(false);
    expect(events.filter((event) => event.kind === "configuration.refused")).toHaveLength(1);
    expect(await readFile(join(runsDir, "only", "report.md"), "utf8")).toContain("clip-5 refused");
  }, 180_000);
});
