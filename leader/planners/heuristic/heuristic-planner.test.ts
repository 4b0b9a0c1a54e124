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
  const oneSeed = (extra = "") =>
    parseTopic(
      `---\nmetric: { name: reward, goal: maximize, score: area }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, time_budget: 10m, gpus: 1 }\nknobs:\n  lr: [0.2, 0.05, 0.5]\n  batch: [8, 4, 16]\nseeds: 1\n${extra}\n---\nWhich lr?\n`,
    );

  it("with one seed per configuration (no variance to race on), refines around the best: the winners combined, then between and beyond", () => {
    const topic = oneSeed("budgets: { stages: 4, experiments: 100 }");
    const first = run(stage(planNext(input(topic))), gentle, 0.05);
    const second = stage(planNext(input(topic, [first])));
    expect(second.kind).toBe("refine");
    expect(second.around).toBe("lr-0.5");
    expect(second.stage).toBe(2);
    const ids = second.configurations.map((item) => item.id);
    expect(ids[0]).toBe("lr-0.5_batch-16");
    // Between 0.2 and 0.5 geometrically (0.316), and beyond 0.5 by the same ratio (1.25).
    expect(ids).toContain("lr-0.316");
    expect(ids).toContain("lr-1.25");
    // Past the tried range is an extrapolation, and the plan says so.
    expect(second.configurations.find((item) => item.id === "lr-1.25")!.extrapolation).toMatch(/outside the tried range 0.05–0.5/);
    expect(second.configurations.find((item) => item.id === "lr-0.316")!.extrapolation).toBeUndefined();
    expect(second.rationale).toMatch(/EXTRAPOLATES beyond the tested range: lr=1.25/);
    expect(second.experiments.every((item) => item.blueprintId.startsWith("s2-"))).toBe(true);
    expect(second.configurations[0]!.prediction).toMatchObject({ kind: "beats-configuration", configurationId: "lr-0.5" });
    expect(second.decisions.some((item) => item.outcome.includes("no configuration of this stage beats lr-0.5"))).toBe(true);
  });

  it("refines around a screen's clear winner once, and stops when the best is still separated beyond seed noise", () => {
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
    expect(step.kind === "stop" && step.explanation).toMatch(/beyond seed noise \(Welch's t, Holm-corrected over \d+ comparison\(s\)/);
    expect(step.kind === "stop" && step.evidence.configurations).toHaveLength(5 + second.configurations.length);
    expect(step.kind === "stop" && step.evidence.status).toBe("separated");
  });

  it("does not refine a separated winner when no stage would be left to replicate what refinement finds", () => {
    const topic = topicWith("budgets: { stages: 2, experiments: 100 }");
    const first = run(stage(planNext(input(topic))), (settings) => (settings.lr === 0.5 ? 0.9 : 0.3), 0.001);
    const step = planNext(input(topic, [first]));
    expect(step).toMatchObject({ kind: "stop", reason: "separated" });
    expect(step.kind === "stop" && step.explanation).toMatch(/not refined around: the stage budget \(2\) leaves no stage to replicate/);
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

  it("with one seed, stops when a refinement stage brings no improvement", () => {
    const topic = oneSeed("budgets: { stages: 5, experiments: 200 }");
    const world = (settings: Record<string, KnobValue>) => (settings.lr === 0.5 && settings.batch === 8 ? 0.6 : 0.55);
    const first = run(stage(planNext(input(topic))), world, 0.05);
    const second = run(stage(planNext(input(topic, [first]))), world, 0.05);
    const step = planNext(input(topic, [first, second]));
    expect(step).toMatchObject({ kind: "stop", reason: "no-improvement" });
    expect(step.kind === "stop" && step.explanation).toMatch(/does not beat lr-0\.5/);
  });

  it("with one seed, keeps refining while stages improve, until the stage budget", () => {
    const topic = oneSeed("budgets: { stages: 2, experiments: 200 }");
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

  it("counts failed seeds but still plans from the ones that scored, with new seed numbers", () => {
    const topic = topicWith("budgets: { stages: 3, experiments: 100 }");
    const first = run(stage(planNext(input(topic))), gentle, 0.05, (id) => id.endsWith("seed3"));
    const step = stage(planNext(input(topic, [first])));
    expect(step.kind).toBe("replicate");
    // seed 3 was planned (and failed): the replication starts at seed 4.
    expect(Math.min(...step.experiments.map((item) => item.seed))).toBe(4);
  });
});

/** A seed's wobble that differs per configuration (as independent runs do), reproducibly. */
function wobble(configurationId: string, seed: number): number {
  let hash = 2166136261;
  for (const character of `${configurationId}#${seed}`) hash = Math.imul(hash ^ character.charCodeAt(0), 16777619) >>> 0;
  return (hash % 2001) / 1000 - 1;
}

function runIndependent(plan: StagePlan, score: (settings: Record<string, KnobValue>) => number, noise: number): StageRecord {
  return {
    plan,
    outcomes: plan.experiments.map((experiment) => {
      const configuration = plan.configurations.find((item) => item.id === experiment.configurationId)!;
      return { ...experiment, state: "succeeded", score: score(configuration.settings) + noise * wobble(configuration.id, experiment.seed) };
    }),
  };
}

describe("heuristic planner: replication before refinement", () => {
  const lrTopic = (extra: string, seeds = 2, stages = 6) =>
    parseTopic(
      `---\nmetric: { name: reward, goal: maximize, score: area${extra} }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, time_budget: 10m, gpus: 0 }\nknobs:\n  lr: [0.2, 0.05, 0.5, 1]\nseeds: ${seeds}\nbudgets: { stages: ${stages}, experiments: 80 }\n---\nWhich lr?\n`,
    );
  // lr 0.5 and 1 are close at the top; 0.05 is far behind; 0.2 in between.
  const world = (settings: Record<string, KnobValue>) => ({ 0.05: 0.1, 0.2: 0.45, 0.5: 0.615, 1: 0.6 })[settings.lr as number]!;

  it("adds seeds to the unseparated contenders only, dropping those clearly worse, with seeds sized from the variance", () => {
    // Four seeds a side: enough shared seeds for the paired comparison (domain/incumbent.ts).
    const topic = lrTopic("", 4);
    const first = runIndependent(stage(planNext(input(topic))), world, 0.02);
    const second = stage(planNext(input(topic, [first])));
    expect(second.kind).toBe("replicate");
    // Racing: only the incumbent and its open contenders are in it, a seed each. With four
    // seeds the paired comparison already shows the baseline worse: only lr-1 stays open.
    expect(
      second.configurations.map((item) => item.id),
      second.rationale,
    ).toEqual(["lr-0.5", "lr-1"]);
    expect(second.rationale).toMatch(/not separated from lr-1; racing, .*lr-0.5 \+1, lr-1 \+1/);
    expect(second.rationale).toMatch(/dropped as worse beyond seed noise: baseline, lr-0.05/);
    // One seed a stage, with a new seed number.
    expect(second.experiments.map((item) => item.blueprintId)).toEqual(["s2-lr-0.5-seed5", "s2-lr-1-seed5"]);
    expect(second.configurations[0]!.purpose).toMatch(/replication: 1 more seed\(s\) \(4 scored so far\)/);
  });

  it("stops on a tie shown within the equivalence margin, and says which configurations are tied", () => {
    const topic = lrTopic(", equivalence: 0.05", 4);
    const tie = (settings: Record<string, KnobValue>) => ({ 0.05: 0.1, 0.2: 0.3, 0.5: 0.61, 1: 0.6 })[settings.lr as number]!;
    let history: StageRecord[] = [runIndependent(stage(planNext(input(topic))), tie, 0.005)];
    let step = planNext(input(topic, history));
    for (let round = 0; round < 4 && step.kind === "stage"; round += 1) {
      history = [...history, runIndependent(step.plan, tie, 0.005)];
      step = planNext(input(topic, history));
    }
    expect(step).toMatchObject({ kind: "stop", reason: "equivalent" });
    expect(step.kind === "stop" && step.explanation).toMatch(/lr-0.5 .* and lr-1 are the same within the equivalence margin 0.05/);
    expect(step.kind === "stop" && step.explanation).toMatch(/baseline, lr-0.05 are worse/);
  });

  it("races to a separated answer, refines around it once, then stops", () => {
    // Stages enough to race one seed a look to the paired comparison's four, then refine and replicate.
    const topic = lrTopic("", 2, 9);
    const tried: Record<number, number> = { 0.05: 0.1, 0.2: 0.45, 0.5: 0.7, 1: 0.62 };
    // Values the refinement adds score below the winner.
    const world = (settings: Record<string, KnobValue>) => tried[settings.lr as number] ?? 0.5;
    let history: StageRecord[] = [runIndependent(stage(planNext(input(topic))), world, 0.03)];
    const kinds: string[] = ["screen"];
    let step = planNext(input(topic, history));
    for (let round = 0; round < 8 && step.kind === "stage"; round += 1) {
      kinds.push(step.plan.kind);
      history = [...history, runIndependent(step.plan, world, 0.03)];
      step = planNext(input(topic, history));
    }
    expect(kinds[1]).toBe("replicate");
    expect(kinds, JSON.stringify(step)).toContain("refine");
    expect(kinds.indexOf("refine")).toBeGreaterThan(kinds.indexOf("replicate"));
    expect(step).toMatchObject({ kind: "stop", reason: "separated" });
    expect(step.kind === "stop" && step.best?.configuration.id).toBe("lr-0.5");
  });

  it("on a budget stop, the explanation says which comparisons are still open", () => {
    const topic = parseTopic(
      `---\nmetric: { name: reward, goal: maximize }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, gpus: 0 }\nknobs: { lr: [0.2, 0.5] }\nseeds: 2\nbudgets: { stages: 1, experiments: 50 }\n---\nq`,
    );
    const first = runIndependent(stage(planNext(input(topic))), (settings) => (settings.lr === 0.5 ? 0.62 : 0.6), 0.05);
    const step = planNext(input(topic, [first]));
    expect(step).toMatchObject({ kind: "stop", reason: "budget" });
    expect(step.kind === "stop" && step.explanation).toMatch(/still open: (lr-0.5 against baseline|baseline against lr-0.5) by/);
  });

  it("stops on the budget when a race's next stage does not fit the experiments left, saying what it needed", () => {
    const topic = parseTopic(
      `---\nmetric: { name: reward, goal: maximize }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, gpus: 0 }\nknobs: { lr: [0.2, 0.5, 1] }\nseeds: 2\nbudgets: { stages: 4, experiments: 9 }\n---\nq`,
    );
    const first = runIndependent(stage(planNext(input(topic))), (settings) => 0.5 + (settings.lr as number) * 0.1, 0.018);
    const second = stage(planNext(input(topic, [first])));
    expect(second.kind).toBe("replicate");
    // One seed per raced configuration a stage.
    expect(second.experiments).toHaveLength(second.configurations.length);
    const tight = { ...topic, budgets: { ...topic.budgets, experiments: 6 + second.experiments.length - 1 } };
    const step = planNext(input(tight, [first]));
    expect(step).toMatchObject({ kind: "stop", reason: "budget" });
    expect(step.kind === "stop" && step.explanation).toMatch(
      new RegExp(`needs ${second.experiments.length} more experiments \\(one seed per configuration it races\\)`),
    );
  });
});

describe("heuristic planner: futility", () => {
  it("stops early when the experiments left cannot be expected to settle any open comparison, and says what would", () => {
    const topic = parseTopic(
      `---\nmetric: { name: reward, goal: maximize }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, gpus: 0 }\nknobs: { lr: [0.2, 0.5] }\nseeds: 2\nbudgets: { stages: 6, experiments: 8 }\n---\nq`,
    );
    // A difference of 0.01 under seed noise of about 0.05 needs dozens of seeds a side.
    const first = runIndependent(stage(planNext(input(topic))), (settings) => (settings.lr === 0.5 ? 0.61 : 0.6), 0.05);
    const step = planNext(input(topic, [first]));
    expect(step).toMatchObject({ kind: "stop", reason: "budget" });
    expect(step.kind === "stop" && step.explanation).toMatch(
      /the 4 experiment\(s\) left of the budget of 8 cannot be expected to settle any open comparison: the cheapest needs \d+ more run\(s\)/,
    );
  });
});

describe("heuristic planner: bounds", () => {
  const oneKnob = (knob: string) =>
    parseTopic(
      `---\nmetric: { name: reward, goal: maximize }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, gpus: 0 }\nknobs:\n  ${knob}\nseeds: 1\nbudgets: { stages: 4, experiments: 50 }\n---\nq`,
    );

  it("keeps refinement inside the topic's declared range", () => {
    const topic = oneKnob("clip: { values: [0.2, 0.05, 1], min: 0, max: 1 }");
    expect(topic.knobRanges).toEqual({ clip: { min: 0, max: 1 } });
    const first = run(stage(planNext(input(topic))), (settings) => settings.clip as number, 0);
    const second = stage(planNext(input(topic, [first])));
    // clip=1 is the largest tried and the best: one step beyond (5) would leave [0, 1], and nothing new is left there.
    expect(second.configurations.map((item) => item.settings.clip)).toEqual([0.447]);
  });

  it("keeps refinement inside the engine schema's bounds, and marks the extrapolation", () => {
    const topic = oneKnob("lr: [0.1, 0.4]");
    const first = run(stage(planNext(input(topic))), (settings) => settings.lr as number, 0);
    const second = stage(planNext({ ...input(topic, [first]), engineBounds: { lr: { min: 0, minExclusive: true, max: 0.5, source: "the engine schema" } } }));
    // lr=0.4 is the best: one step beyond (1.6) is kept at the engine's bound 0.5.
    const beyond = second.configurations.find((item) => item.purpose.includes("lr=0.4 is the largest value tried"));
    expect(beyond?.settings.lr).toBe(0.5);
    expect(beyond?.purpose).toMatch(/one step would be 1.6; kept > 0 and ≤ 0.5, the bound of the engine schema/);
    expect(beyond?.extrapolation).toMatch(/lr=0.5 lies outside the tried range 0.1–0.4/);
    expect(second.configurations.every((item) => (item.settings.lr as number) <= 0.5)).toBe(true);
  });

  it("refuses a topic whose knob values leave its own range", () => {
    expect(() => parseTopic(`---\nmetric: { name: r, goal: maximize }\nknobs:\n  clip: { values: [0.2, 5], min: 0, max: 1 }\n---\nq`)).toThrow(
      /knobs.clip: every value must lie within min and max/,
    );
  });
});

describe("heuristic planner: budgets", () => {
  it("refuses a screen larger than the experiment budget", () => {
    const step = planNext(input(topicWith("budgets: { experiments: 10 }")));
    expect(step).toMatchObject({ kind: "stop", reason: "budget" });
    expect(step.kind === "stop" && step.explanation).toMatch(/needs 15 experiments but only 10/);
  });

  it("cuts a refinement stage to the configurations that fit", () => {
    const topic = parseTopic(
      `---\nmetric: { name: reward, goal: maximize, score: area }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, time_budget: 10m, gpus: 1 }\nknobs:\n  lr: [0.2, 0.05, 0.5]\n  batch: [8, 4, 16]\nseeds: 1\nbudgets: { stages: 3, experiments: 7 }\n---\nWhich lr?\n`,
    );
    const first = run(stage(planNext(input(topic))), (settings) => 0.5 + (settings.lr === 0.5 ? 0.02 : 0) + (settings.batch === 16 ? 0.015 : 0), 0.05);
    const second = stage(planNext(input(topic, [first])));
    expect(second.configurations).toHaveLength(2);
    expect(second.experiments).toHaveLength(2);
    expect(second.rationale).toMatch(/cut to 2 configuration/);
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
