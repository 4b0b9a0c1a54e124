import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { runA3r } from "../test-support/run-cli.ts";

/**
 * Where an override lands is decided once (blueprints/overrides/), and every party obeys
 * it. The case that used to split them: a swarm.yaml that leaves out its optional
 * `optimizer:` section and a topic knob `lr`. The leader placed `lr` on `optimizer.lr`
 * and passed its audit; the worker wrote a top-level `lr`; the server refused `unknown key
 * "lr"`; the campaign stopped at its smoke test, unanswered, and exited 0. Now the run's
 * config copy holds `optimizer.lr`, the campaign reaches its report, and a campaign that
 * stops unanswered exits 1.
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

function topic(config: string, command: string, knob = "lr: [0.3, 0.05]"): string {
  return `---
title: Where does lr land
metric: { name: rollout_reward_mean, goal: maximize, score: final }
base:
  mode: swarm
  codebase: ${repository}
  interpreter: node
  config: ${config}
  command: ${command}
  time_budget: 3m
  first_signal_timeout: 2m
  gpus: 0
  blueprint:
    worker: { poll_interval: 200ms, heartbeat_interval: 2s, stall_timeout: 2m, grace_period: 2s, lease_ttl: 30s }
knobs:
  ${knob}
seeds: 1
budgets: { stages: 1, experiments: 4 }
review: false
leader: { poll_interval: 200ms }
---
Does the learning rate change the reward?
`;
}

const client = "node bin/a3r.js swarm client item-color --url {swarm_url} --episodes 2000 --concurrency 4";

describe("an override key lands where the leader's audit checked it", () => {
  let dir: string;
  let config: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-override-landing-"));
    config = join(dir, "swarm.yaml");
    await writeFile(config, swarmYaml);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a topic knob lr on a swarm.yaml without optimizer: runs, with optimizer.lr in every config copy", async () => {
    const topicFile = join(dir, "lr.md");
    await writeFile(topicFile, topic(config, client));
    const runsDir = join(dir, "runs");
    const research = await runA3r(["research", topicFile, "--runs-dir", runsDir, "--planner", "heuristic", "--max-stages", "1"], { timeoutMs: 240_000 });
    expect(research.stderr).not.toMatch(/unknown key/);
    expect(research.stderr).not.toMatch(/stopped: (stage-failed|audit-failed)/);
    expect(research.code, research.stderr).toBe(0);
    const results = join(runsDir, "where-does-lr-land", "results");
    const runs = await readdir(results);
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const run of runs) {
      const copy = parseYaml(await readFile(join(results, run, "config", "attempt-1.yaml"), "utf8")) as Record<string, unknown>;
      expect(copy.lr, run).toBeUndefined();
      expect((copy.optimizer as { lr?: number } | undefined)?.lr, run).toBeTypeOf("number");
    }
  }, 300_000);

  it("validate and the worker agree on a value the engine refuses: clip 5 on the same swarm.yaml", async () => {
    const blueprint = join(dir, "clip.md");
    const template = await runA3r(["blueprint", "new", "--mode", "swarm", "--id", "clip-5", "--out", blueprint]);
    expect(template.code, template.stderr).toBe(0);
    const text = (await readFile(blueprint, "utf8")).replace("overrides:\n  lr: 0.000003", "overrides:\n  clip: 5");
    await writeFile(blueprint, text.replace("`/opt/a3r/examples/grpo-arithmetic/configs/grpo-base.yaml`", `\`${config}\``));
    const validate = await runA3r(["blueprint", "validate", blueprint]);
    expect(validate.code, validate.stdout).toBe(1);
    expect(validate.stdout).toMatch(/error OVERRIDE_INVALID override clip=5 \(config field optimizer\.clip\) fails the engine's schema/);
  });

  it("a campaign that stops without answering (its smoke test fails) exits 1", async () => {
    const topicFile = join(dir, "broken.md");
    await writeFile(topicFile, topic(config, "node -e process.exit(3)").replace("title: Where does lr land", "title: Broken command"));
    const research = await runA3r(["research", topicFile, "--runs-dir", join(dir, "runs-broken"), "--planner", "heuristic"], { timeoutMs: 240_000 });
    expect(research.stderr).toMatch(/stopped: stage-failed/);
    expect(research.code).toBe(1);
  }, 300_000);
});
