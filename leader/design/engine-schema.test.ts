import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { swarmConfigSchema } from "../../swarm/index.ts";
import { loadTopic } from "../domain/topic.ts";
import { campaignPaths } from "../../campaign/index.ts";
import { planNext } from "../planners/heuristic/heuristic-planner.ts";
import { engineFindings } from "./engine-findings.ts";
import { checkOverrides, engineBounds, engineSchemaFor, numericBound, overridePath } from "./engine-schema.ts";
import { draftStageBlueprints } from "./write-blueprints.ts";

const root = resolve(import.meta.dirname, "../..");

describe("the engine's config schema in the leader", () => {
  it("reads a knob's bounds from the swarm schema, where the worker would put the override", async () => {
    const { topic } = await loadTopic(join(root, "examples/topics/embedded-lr.md"));
    const engine = (await engineSchemaFor({ swarm: swarmConfigSchema }, topic))!;
    expect(engine).toBeDefined();
    // `lr` and `clip` are leaves of optimizer; `num_repeat` is top level.
    expect(overridePath("lr", engine.config, swarmConfigSchema)).toBe("optimizer.lr");
    expect(overridePath("clip", engine.config, swarmConfigSchema)).toBe("optimizer.clip");
    const bounds = engineBounds(engine, ["clip", "lr", "num_repeat", "sampling.top_p"]);
    expect(bounds.clip).toMatchObject({ min: 0, minExclusive: true, max: 1, maxExclusive: false });
    expect(bounds.lr).toMatchObject({ min: 0, minExclusive: true });
    expect(bounds.lr?.max).toBeUndefined();
    expect(bounds.num_repeat).toMatchObject({ integer: true, min: 0, minExclusive: true });
    expect(bounds["sampling.top_p"]).toMatchObject({ max: 1 });
    expect(numericBound(swarmConfigSchema, "host")).toBeUndefined();
  });

  it("fails overrides the engine would refuse, naming the override and the field", async () => {
    const { topic } = await loadTopic(join(root, "examples/topics/embedded-lr.md"));
    const engine = (await engineSchemaFor({ swarm: swarmConfigSchema }, topic))!;
    expect(checkOverrides(engine, { lr: 0.5, clip: 0.3, max_steps: 20, seed: 2 })).toEqual([]);
    const problems = checkOverrides(engine, { clip: 5, max_steps: 20 });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^override clip=5 \(config field optimizer.clip\) fails the engine's schema: .*1/);
    expect(checkOverrides(engine, { num_repeat: 2.5 })[0]).toMatch(/override num_repeat=2.5/);
    expect(checkOverrides(engine, { optimiser_lr: 0.1 })[0]).toMatch(/optimiser_lr/);
  });

  it("has nothing to check without a schema for the mode or a readable config", async () => {
    const { topic } = await loadTopic(join(root, "examples/topics/embedded-lr.md"));
    expect(await engineSchemaFor(undefined, topic)).toBeUndefined();
    expect(await engineSchemaFor({ classic: swarmConfigSchema }, topic)).toBeUndefined();
    expect(await engineSchemaFor({ swarm: swarmConfigSchema }, { ...topic, base: { ...topic.base!, config: "/nonexistent/x.yaml" } })).toBeUndefined();
  });
});

describe("the audit's engine check", () => {
  it("finds the blueprint whose overrides the engine would refuse, on its overrides line", async () => {
    const { topic } = await loadTopic(join(root, "examples/topics/embedded-lr.md"));
    const clipTopic = { ...topic, knobs: { clip: [0.2, 5] }, seeds: 1 };
    const step = planNext({ topic: clipTopic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
    if (step.kind !== "stage") throw new Error(step.explanation);
    const drafts = draftStageBlueprints(clipTopic, step.plan, campaignPaths("/tmp/a3r-engine-check", "c"));
    const engine = (await engineSchemaFor({ swarm: swarmConfigSchema }, clipTopic))!;
    const findings = engineFindings(engine, drafts);
    expect(findings.map((finding) => finding.blueprintId)).toEqual(["s1-clip-5-seed1"]);
    expect(findings[0]!.line).toBeGreaterThan(1);
    expect(findings[0]!.message).toMatch(/override clip=5 \(config field optimizer.clip\)/);
  });
});
