import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseBlueprint } from "../../blueprints/index.ts";
import { createCampaign } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { planNext } from "../planners/heuristic/heuristic-planner.ts";
import type { StagePlan } from "../domain/planner.ts";
import { loadTopic, type Topic } from "../domain/topic.ts";
import { writeStageBlueprints } from "./write-blueprints.ts";
import { readStagePlan, writeStagePlan } from "../record/stage-plan-file.ts";

const topicFile = resolve(import.meta.dirname, "../../examples/topics/embedded-lr.md");

describe("writeStageBlueprints", () => {
  let runsDir: string;
  let paths: CampaignPaths;
  let topic: Topic;
  let plan: StagePlan;

  beforeEach(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-leader-write-"));
    const loaded = await loadTopic(topicFile);
    topic = loaded.topic;
    paths = (await createCampaign(runsDir, "embedded-lr", loaded.text)).paths;
    const step = planNext({ topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
    if (step.kind !== "stage") throw new Error(step.explanation);
    plan = step.plan;
  });
  afterEach(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  it("writes one audited blueprint per experiment, with every knob, the seed and the base overrides", async () => {
    const written = await writeStageBlueprints(topic, plan, paths);
    expect(written.map((item) => item.blueprintId)).toEqual([
      "s1-baseline-seed1",
      "s1-baseline-seed2",
      "s1-lr-0.05-seed1",
      "s1-lr-0.05-seed2",
      "s1-lr-0.5-seed1",
      "s1-lr-0.5-seed2",
    ]);
    expect((await readdir(paths.stage(1).blueprints)).sort()).toHaveLength(6);
    for (const item of written) expect(item.findings.filter((finding) => finding.severity === "error")).toEqual([]);

    const text = await readFile(paths.stage(1).blueprint("s1-lr-0.05-seed2"), "utf8");
    const blueprint = parseBlueprint(text, "s1-lr-0.05-seed2.md");
    expect(blueprint.frontMatter).toMatchObject({
      campaign: "embedded-lr",
      stage: 1,
      mode: "swarm",
      seed: 2,
      hypothesis: "H1",
      metric: { name: "rollout_reward_mean", goal: "maximize" },
      overrides: { max_steps: 20, lr: 0.05, seed: 2 },
      configuration: "lr-0.05",
      first_signal_timeout: "2m",
      worker: { poll_interval: "1s" },
    });
    expect(blueprint.frontMatter.prediction).toMatch(/higher than the baseline's/);
    expect(blueprint.resultDir).toBe(join(paths.results, "s1-lr-0.05-seed2"));
    // The topic names them relative to its own file (`../..`, `node`): they arrive absolute.
    const checkout = resolve(import.meta.dirname, "../..");
    expect(blueprint.codebase).toBe(checkout);
    expect(blueprint.venv).toBe("node");
    expect(blueprint.config).toBe(join(checkout, "examples/blueprints/swarm-demo.swarm.yaml"));
    expect(blueprint.command.split("\n")).toHaveLength(2);
    expect(blueprint.timeBudgetMs).toBe(600_000);
    expect(blueprint.purpose).toMatch(/one factor at a time: lr 0.2 → 0.05/);
  });

  it("is idempotent, and refuses to rewrite a blueprint whose text changed", async () => {
    const first = await writeStageBlueprints(topic, plan, paths);
    const second = await writeStageBlueprints(topic, plan, paths);
    expect(second.map((item) => item.file)).toEqual(first.map((item) => item.file));
    const file = paths.stage(1).blueprint("s1-baseline-seed1");
    await writeFile(file, (await readFile(file, "utf8")).replace("10m", "11m"));
    await expect(writeStageBlueprints(topic, plan, paths)).rejects.toThrow(/already exists with different content/);
  });

  it("reports audit findings for a base experiment the policy forbids", async () => {
    const risky: Topic = { ...topic, base: { ...topic.base!, command: "rm -rf / --no-preserve-root" } };
    const written = await writeStageBlueprints(risky, plan, paths);
    expect(written[0]!.findings.some((finding) => finding.severity === "error")).toBe(true);
  });
});

describe("stage plan file", () => {
  let runsDir: string | undefined;
  afterEach(async () => {
    if (runsDir) await rm(runsDir, { recursive: true, force: true });
  });

  it("writes plan.md for a person and reads the same plan back", async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-leader-plan-"));
    const loaded = await loadTopic(topicFile);
    const paths = (await createCampaign(runsDir, "plan-file", loaded.text)).paths;
    const step = planNext({ topic: loaded.topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
    if (step.kind !== "stage") throw new Error(step.explanation);
    const file = await writeStagePlan(paths, step.plan, loaded.topic.title);
    const text = await readFile(file, "utf8");
    expect(text).toMatch(/^# Stage 1 plan \(screen\)/);
    expect(text).toMatch(/\| lr-0\.05 \| lr=0\.05 \| H1 \|/);
    expect(text).toMatch(/- If otherwise: add seeds to the contenders not yet separated in stage 2/);
    expect(await readStagePlan(paths, 1)).toEqual(step.plan);
    await writeFile(file, text.replace('"kind": "screen"', '"kind": "guess"'));
    await expect(readStagePlan(paths, 1)).rejects.toThrow(/stage plan field kind/);
  });
});
