import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTopic } from "../leader/index.ts";
import { runA3r } from "../test-support/run-cli.ts";

const root = resolve(import.meta.dirname, "..");

/**
 * Topics in a minute: `a3r topic new` drafts one from a blueprint or a swarm config, a
 * question with `--base` runs without a topic file, and a topic the heuristic planner
 * cannot plan is refused with the lines to add, before a campaign exists.
 */
describe("a3r topic new and free-text research", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-topic-new-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("drafts a runnable topic from a blueprint: base, metric and a proposed knob, with paths relative to the topic", async () => {
    const out = join(dir, "drafted.md");
    const result = await runA3r([
      "topic",
      "new",
      "--from",
      join(root, "examples/blueprints/swarm-demo.md"),
      "--question",
      "Which lr learns fastest?",
      "--out",
      out,
      "--yes",
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`topic: ${out}`);
    expect(result.stderr).toMatch(/assumed knob: optimizer\.lr at 0\.2, 0\.1, 0\.4/);
    const text = await readFile(out, "utf8");
    // Relative to the topic (../x) when the two share a folder above, absolute when only /.
    expect(text).toMatch(/codebase: (\/|\.\.\/|\.\/)/);
    const topic = parseTopic(text, { file: out });
    expect(topic.base).toMatchObject({ mode: "swarm", codebase: root, interpreter: "node", config: join(root, "examples/blueprints/swarm-demo.swarm.yaml") });
    expect(topic.metric).toMatchObject({ name: "rollout_reward_mean", goal: "maximize" });
    expect(topic.knobs).toEqual({ "optimizer.lr": [0.2, 0.1, 0.4] });
    // The step limit is written down and the cost said, not left to the config's default.
    expect(topic.base?.overrides).toEqual({ max_steps: 40 });
    expect(result.stderr).toMatch(/cost: the first stage runs 9 experiment\(s\) \(3 value\(s\) x 3 seed\(s\)\), each up to 40 training steps/);
    const short = join(dir, "short.md");
    const shorter = await runA3r([
      "topic",
      "new",
      "--from",
      join(root, "examples/blueprints/swarm-demo.md"),
      "--question",
      "Q?",
      "--max-steps",
      "12",
      "--out",
      short,
      "--yes",
    ]);
    expect(shorter.code, shorter.stderr).toBe(0);
    expect(parseTopic(await readFile(short, "utf8"), { file: short }).base?.overrides).toEqual({ max_steps: 12 });

    const again = await runA3r(["topic", "new", "--from", join(root, "examples/blueprints/swarm-demo.md"), "--out", out, "--yes"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/--out.*exists/);
  });

  it("says which flag is missing: the command for a config alone, the question without a terminal", async () => {
    const config = await runA3r([
      "topic",
      "new",
      "--from",
      join(root, "examples/blueprints/swarm-demo.swarm.yaml"),
      "--question",
      "Q?",
      "--out",
      join(dir, "c.md"),
    ]);
    expect(config.code).toBe(2);
    expect(config.stderr).toMatch(/--command/);
    const question = await runA3r(["topic", "new", "--from", join(root, "examples/blueprints/swarm-demo.md"), "--out", join(dir, "q.md")]);
    expect(question.code).toBe(2);
    expect(question.stderr).toMatch(/--question/);
  });

  it("refuses a topic without knobs, listing what to add, and creates no campaign", async () => {
    const topic = join(dir, "no-knobs.md");
    await writeFile(topic, "---\nmetric: { name: reward_mean, goal: maximize }\n---\nDoes anything matter?\n");
    const runsDir = join(dir, "runs-refused");
    const result = await runA3r(["research", topic, "--runs-dir", runsDir, "--planner", "heuristic"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot plan this topic yet/);
    expect(result.stderr).toMatch(/- add `knobs:`/);
    expect(await readdir(runsDir).catch(() => [])).toEqual([]);
  });

  it("runs a question with --base and --knob to its report, without a topic file", async () => {
    const blueprint = join(dir, "fixture.md");
    await writeFile(
      blueprint,
      `---
a3r: blueprint/v1
id: fixture
mode: classic
gpus: 0
first_signal_timeout: 1m
metric: { name: reward_mean, goal: maximize }
worker: { poll_interval: 200ms, heartbeat_interval: 2s, stall_timeout: 1m, grace_period: 2s, lease_ttl: 30s }
---
# Experiment Blueprint: fixture

## Purpose

The fixture trainer, for drafting a topic from a blueprint.

## Codebase

\`${join(root, "worker/__fixtures__")}\`

## Virtual Environment

\`node\`

## Configuration

none

## Command

\`\`\`bash
node trainer.mjs --steps 3 --step-ms 50
\`\`\`

## Result Directory

\`/tmp/a3r-runs/fixture\`

## Time Budget

2m
`,
    );
    const runsDir = join(dir, "runs");
    const result = await runA3r(
      [
        "research",
        "Does lr change the fixture reward?",
        "--base",
        blueprint,
        "--knob",
        "lr=0.1,0.01",
        "--seeds",
        "1",
        "--max-stages",
        "1",
        "--runs-dir",
        runsDir,
        "--planner",
        "heuristic",
      ],
      { timeoutMs: 120_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^report: .*does-lr-change-the-fixture-reward\/report\.md$/m);
    const copy = await readFile(join(runsDir, "does-lr-change-the-fixture-reward", "topic.md"), "utf8");
    expect(parseTopic(copy).knobs).toEqual({ lr: [0.1, 0.01] });
  }, 150_000);
});
