import { describe, expect, it } from "vitest";
import { configurationId } from "../../domain/configurations.ts";
import { HeuristicPlanner, planNext } from "./heuristic-planner.ts";
import type { ExperimentOutcome, PlannerInput, PlannerStep, StagePlan, StageRecord } from "../../domain/planner.ts";
import { parseTopic, type KnobValue, type Topic } from "../../domain/topic.ts";

function topicWith(extra: string, knobs = "knobs:\n  lr: [0.2, 0.05, 0.5]\n  batch: [8, 4, 16]"): Topic {
  return parseTopic(
    `---\nmetric: { name: reward, goal: maximize, score: area }\nbase: { codebase: /c, interpreter: /usr/bin/node, config: /c/x.yaml, command: run, time_budget: 10m, gpus: 1 }\n${knobs}\nseeds: 3\n${extra}\n---\nWhich lr?\n`,
  );
}

/** Runs a plan against a made-up world: score = f(settings) + a seed-dependent wobble. */
function run(plan: StagePlan, score: (settings: Record<string, KnobValue>) => number, noise = 0.01, fail: (id: string) => boolean = () => false): StageRecord {
  const outcomes: ExperimentOutcome[] = plan.experiments.map((experiment) => {
    const configuration = plan.configurations.find((item) => item.id === experiment.configurationId)!;
    if (fail(experiment.blueprintId)) return { ...experiment, state: "failed", score: undefined, reason: "worker lost" };
    return { ...experiment, state: "succeeded", score: score(configuration.settings) + noise * (experiment.seed - 2) };
  });
  return { plan, outcomes };
}

function stage(step: PlannerStep): StagePlan {
  if (step.kind !== "stage") throw new Error(`expected a stage, got stop: ${step.explanation}`);
  return step.plan;
}

const usage = { gpuHours: 0, wallTimeMs: 0 };
const input = (topic: Topic, history: StageRecord[] = []): PlannerInput => ({ topic, history, usage });

describe("heuristic planner: the screen", () => {
  it("plans the baseline and one factor at a time over the knobs, each with every seed", () => {
    const plan = stage(planNext(input(topicWith("budgets: { stages: 3, experiments: 100 }"))));
    expect(plan.stage).toBe(1);
    expect(plan.kind).toBe("screen");
    expect(plan.configurations.map((item) => item.id)).toEqual(["baseline", "lr-0.05", "lr-0.5", "batch-4", "batch-16"]);
    expect(plan.configurations[1]!.delta).toEqual({ lr: 0.05 });
    expect(plan.configurations[1]!.settings).toEqual({ lr: 0.05, batch: 8 });
    expect(plan.experiments).toHaveLength(15);
    expect(plan.experiments.slice(0, 3).map((item) => item.blueprintId)).toEqual(["s1-baseline-seed1", "s1-baseline-seed2", "s1-baseline-seed3"]);
    expect(new Set(plan.experiments.map((item) => item.blueprintId)).size).toBe(15);
    expect(plan.hypotheses.map((item) => item.id)).toEqual(["H0", "H1", "H2"]);
    expect(plan.configurations[1]!.prediction).toMatchObject({ kind: "beats-configuration", configurationId: "baseline" });
    expect(plan.decisions.map((item) => item.outcome)).toContain("otherwise");
    // Plain JSON: survives a round trip unchanged.
    expect(JSON.parse(JSON.stringify(plan))).toEqual(plan);
  });

  it("is deterministic and the port answers the same as the function", async () => {
    const topic = topicWith("");
    expect(await new HeuristicPlanner().next(input(topic))).toEqual(planNext(input(topic)));
    expect(JSON.stringify(planNext(input(topic)))).toBe(JSON.stringify(planNext(input(topicWith("")))));
  });

  it("says what it needs for a plain-sentence topic instead of planning", () => {
    const step = planNext(input(parseTopic("Is a smaller learning rate better?")));
    expect(step).toMatchObject({ kind: "stop", reason: "needs-input" });
    expect(step.kind === "stop" && step.explanation).toMatch(/metric.*knobs/s);
  });
});

describe("heuristic planner: refinement and stopping", () => {
  // lr matters a little, batch barely: no configuration separates beyond noise in the screen.
  const gentle = (settings: Record<string, KnobValue>) => 0.5 + (settings.lr === 0.5 ? 0.02 : 0) + (settings.batch === 16 ? 0.015 : 0);

  it("refines around the best: the winners combined, then between and beyond the best value", () => {
    const topic = topicWith("budgets: { stages: 4, experiments: 100 }");
    const first = run(stage(planNext(input(topic))), gentle, 0.05);
    const second = stage(planNext(input(topic, [first])));
    expect(second.kind).toBe("refine");
    expect(second.stage).toBe(2);
    const ids = second.configurations.map((item) => item.id);
    expect(ids[0]).toBe("lr-0.5_batch-16");
    // Between 0.2 and 0.5 geometrically (0.316), and beyond 0.5 by the same ratio (1.25).
    expect(ids).toContain("lr-0.316");
    expect(ids).toContain("lr-1.25");
    expect(second.experiments.every((item) => item.blueprintId.startsWith("s2-"))).toBe(true);
    expect(second.configurations[0]!.prediction).toMatchObject({ kind: "beats-configuration", configurationId: "lr-0.5" });
    expect(second.decisions.some((item) => item.outcome.includes("no configuration of this stage beats lr-0.5"))).toBe(true);
  });

  it("refines around a screen's clear winner, and stops when the best is still separated beyond seed noise", () => {
    const topic = topicWith("");
    const world = (settings: Record<string, KnobValue>) => (settings.lr === 0.5 && settings.batch === 8 ? 0.9 : 0.3);
    const first = run(stage(planNext(input(topic))), world, 0.001);
    // The screen's values are coarse: its separated winner is refined around first.
    const second = stage(planNext(input(topic, [first])));
    expect(second.kind).toBe("refine");
    expect(second.configurations.map((item) => item.id)).toContain("lr-1.25");
    const step = planNext(input(topic, [first, run(second, world, 0.001)]));
    expect(step).toMatchObject({ kind: "stop", reason: "separated" });
    expect(step.kind === "stop" && step.best?.configuration.id).toBe("lr-0.5");
    expect(step.kind === "stop" && step.evidence.configurations).toHaveLength(5 + second.configurations.length);
  });

  it("stops after the screen on a separated winner when no refinement can run", () => {
    const topic = topicWith("budgets: { stages: 1, experiments: 100 }");
    const first = run(stage(planNext(input(topic))), (settings) => (settings.lr === 0.5 ? 0.9 : 0.3), 0.001);
    expect(planNext(input(topic, [first]))).toMatchObject({ kind: "stop", reason: "separated" });
  });

  it("never calls a single-seed winner separated: without seed noise it refines instead", () => {
    const topic = parseTopic(
      `---\nmetric: { name: reward, goal: minimize }\nbase: { codebase: /c, interpreter: /n, command: run }\nknobs: { lr: [1, 2] }\nseeds: 1\n---\nq`,
    );
    const first = run(stage(planNext(input(topic))), (settings) => (settings.lr === 2 ? 0.1 : 0.9), 0);
    const step = stage(planNext(input(topic, [first])));
    expect(step.configurations.map((item) => item.id)).toEqual(["lr-4"]);
  });

  it("stops when a refinement stage brings no improvement", () => {
    const topic = topicWith("budgets: { stages: 5, experiments: 200 }");
    const world = (settings: Record<string, KnobValue>) => (settings.lr === 0.5 && settings.batch === 8 ? 0.6 : 0.55);
    const first = run(stage(planNext(input(topic))), world, 0.05);
    const second = run(stage(planNext(input(topic, [first]))), world, 0.05);
    const step = planNext(input(topic, [first, second]));
    expect(step).toMatchObject({ kind: "stop", reason: "no-improvement" });
    expect(step.kind === "stop" && step.explanation).toMatch(/does not beat lr-0\.5/);
  });

  it("keeps refining while stages improve, until the stage budget", () => {
    const topic = topicWith("budgets: { stages: 2, experiments: 200 }");
    const first = run(stage(planNext(input(topic))), gentle, 0.05);
    const second = run(stage(planNext(input(topic, [first]))), (settings) => gentle(settings) + (settings.lr === 1.25 ? 0.01 : 0), 0.05);
    const step = planNext(input(topic, [first, second]));
    expect(step).toMatchObject({ kind: "stop", reason: "budget" });
    expect(step.kind === "stop" && step.explanation).toMatch(/budget of 2 stage/);
  });

  it("stops with the failures when no experiment of a stage scored", () => {
    const topic = topicWith("");
    const first = run(stage(planNext(input(topic))), gentle, 0.01, () => true);
    const step = planNext(input(topic, [first]));
    expect(step).toMatchObject({ kind: "stop", reason: "stage-failed" });
    expect(step.kind === "stop" && (step.evidence.failures as string[])[0]).toBe("s1-baseline-seed1: failed (worker lost)");
  });

  it("counts failed seeds but still plans from the ones that scored", () => {
    const topic = topicWith("budgets: { stages: 3, experiments: 100 }");
    const first = run(stage(planNext(input(topic))), gentle, 0.05, (id) => id.endsWith("seed3"));
    const step = stage(planNext(input(topic, [first])));
    expect(step.kind).toBe("refine");
  });
});

describe("heuristic planner: budgets", () => {
  it("refuses a screen larger than the experiment budget", () => {
    const step = planNext(input(topicWith("budgets: { experiments: 10 }")));
    expect(step).toMatchObject({ kind: "stop", reason: "budget" });
    expect(step.kind === "stop" && step.explanation).toMatch(/needs 15 experiments but only 10/);
  });

  it("cuts a refinement stage to the configurations that fit", () => {
    const topic = topicWith("budgets: { stages: 3, experiments: 21 }");
    const first = run(stage(planNext(input(topic))), (settings) => 0.5 + (settings.lr === 0.5 ? 0.02 : 0) + (settings.batch === 16 ? 0.015 : 0), 0.05);
    const second = stage(planNext(input(topic, [first])));
    expect(second.configurations).toHaveLength(2);
    expect(second.experiments).toHaveLength(6);
    expect(second.rationale).toMatch(/cut to 2/);
  });

  it("refuses a stage whose time budgets exceed the GPU-hours or the wall time left", () => {
    const gpu = planNext({ topic: topicWith("budgets: { gpu_hours: 2 }"), history: [], usage });
    expect(gpu).toMatchObject({ kind: "stop", reason: "budget" });
    expect(gpu.kind === "stop" && gpu.explanation).toMatch(/2\.5 GPU-hours/);
    const wall = planNext({ topic: topicWith("budgets: { wall_time: 1h }"), history: [], usage: { gpuHours: 0, wallTimeMs: 55 * 60_000 } });
    expect(wall).toMatchObject({ kind: "stop", reason: "budget" });
  });
});

describe("configuration ids", () => {
  it("are readable when safe and hashed when not, never colliding", () => {
    expect(configurationId({})).toBe("baseline");
    expect(configurationId({ lr: 0.05, batch: 16 })).toBe("lr-0.05_batch-16");
    const upper = configurationId({ model: "Big/One" });
    const lower = configurationId({ model: "big-one" });
    expect(upper).toMatch(/^model-big-one-[0-9a-f]{8}$/);
    expect(upper).not.toBe(lower);
    const long = configurationId({ very_long_knob_name_number_one: "x".repeat(80) });
    expect(long.length).toBeLessThanOrEqual(69);
  });
});

describe("heuristic planner: reviewer instructions", () => {
  const instruction = (text: string) => ({ stage: 1, at: "plan" as const, text, time: "2026-11-29T12:00:00.000Z" });

  it("applies seeds=N and drop <knob>=<value>, and says so in the rationale", () => {
    const topic = topicWith("budgets: { stages: 3, experiments: 100 }");
    const plan = stage(planNext({ ...input(topic), instructions: [instruction("seeds=2; drop lr=0.5")] }));
    expect(plan.configurations.map((item) => item.id)).toEqual(["baseline", "lr-0.05", "batch-4", "batch-16"]);
    expect(plan.experiments).toHaveLength(8);
    expect(plan.rationale).toContain("reviewer instructions applied: seeds=2; drop lr=0.5");
  });

  it("keeps what it cannot read as not understood, and never drops the baseline value", () => {
    const topic = topicWith("budgets: { stages: 3, experiments: 100 }");
    const plan = stage(planNext({ ...input(topic), instructions: [instruction("please try a cosine schedule\ndrop lr=0.2")] }));
    expect(plan.configurations.map((item) => item.id)).toEqual(["baseline", "lr-0.05", "lr-0.5", "batch-4", "batch-16"]);
    expect(plan.rationale).toContain("not understood by the heuristic planner");
    expect(plan.rationale).toContain("please try a cosine schedule; drop lr=0.2");
  });
});
