import { makeConfiguration } from "../leader/domain/configurations.ts";
import type { PlannedConfiguration, StagePlan } from "../leader/domain/planner.ts";
import type { KnobValue } from "../leader/domain/topic.ts";

/**
 * A small two-stage campaign for the report tests, as data: the topic text, the stage
 * plans, and each run's curve and ending. Stage 1 screens three learning rates with three
 * seeds; stage 2 refines one, and one of its seeds fails part way (out of memory). The
 * final reward is the configuration's level plus a small seed offset, so the expected
 * figures are easy to compute by hand: lr-0.03 (0.8) is best, beyond seed noise.
 */
export const fixtureMetric = "reward_mean";

export function reportFixtureTopicText(title = "Which lr gives the best final reward?"): string {
  return `---
title: ${JSON.stringify(title)}
metric: { name: ${fixtureMetric}, goal: maximize, score: final, reference: 0.1 }
knobs:
  lr: [0.1, 0.01, 1, 0.03]
seeds: 3
budgets: { stages: 2, experiments: 20 }
---
Which learning rate gives the best final reward_mean?
`;
}

export interface FixtureRun {
  stage: number;
  blueprintId: string;
  configurationId: string;
  seed: number;
  state: "succeeded" | "failed";
  reason?: string;
  records: { step: number; [fixtureMetric]: number }[];
}

const levels: Record<string, number> = { baseline: 0.5, "lr-0.01": 0.3, "lr-1": 0.52, "lr-0.03": 0.8 };
const baselineSettings: Record<string, KnobValue> = { lr: 0.1 };

function planned(settings: Record<string, KnobValue>, purpose: string): PlannedConfiguration {
  const configuration = makeConfiguration(settings, baselineSettings);
  const prediction =
    configuration.id === "baseline"
      ? { kind: "above-level" as const, text: "reward_mean above 0.1", level: 0.1 }
      : { kind: "beats-configuration" as const, text: "final reward_mean better than baseline", configurationId: "baseline" };
  return { ...configuration, hypothesis: configuration.id === "baseline" ? "H0" : "H1", prediction, purpose };
}

function plan(stage: number, kind: "screen" | "refine", configurations: PlannedConfiguration[], seeds: number[]): StagePlan {
  return {
    stage,
    kind,
    rationale: kind === "screen" ? "screen lr one factor at a time" : "refine around the best",
    hypotheses: [
      { id: "H0", statement: "the baseline learns" },
      { id: "H1", statement: "another lr learns better" },
    ],
    configurations,
    experiments: configurations.flatMap((configuration) =>
      seeds.map((seed) => ({ blueprintId: `s${stage}-${configuration.id}-seed${seed}`, configurationId: configuration.id, seed })),
    ),
    decisions: [{ outcome: "anything", decision: "report" }],
  };
}

export function reportFixturePlans(): StagePlan[] {
  return [
    plan(1, "screen", [planned({ lr: 0.1 }, "baseline"), planned({ lr: 0.01 }, "smaller lr"), planned({ lr: 1 }, "larger lr")], [1, 2, 3]),
    plan(2, "refine", [planned({ lr: 0.03 }, "between the two best")], [1, 2, 3]),
  ];
}

/** Five steps per run (0..4) rising to level + seed offset; s2-lr-0.03-seed3 fails after two. */
export function reportFixtureRuns(): FixtureRun[] {
  return reportFixturePlans().flatMap((stagePlan) =>
    stagePlan.experiments.map((experiment): FixtureRun => {
      const final = levels[experiment.configurationId]! + 0.02 * (experiment.seed - 2);
      const failed = experiment.blueprintId === "s2-lr-0.03-seed3";
      const steps = failed ? [0, 1] : [0, 1, 2, 3, 4];
      return {
        stage: stagePlan.stage,
        blueprintId: experiment.blueprintId,
        configurationId: experiment.configurationId,
        seed: experiment.seed,
        state: failed ? "failed" : "succeeded",
        ...(failed ? { reason: "out of memory: CUDA out of memory <tried to allocate 2 GiB>" } : {}),
        records: steps.map((step) => ({ step, [fixtureMetric]: Number(((final * (step + 1)) / 5).toFixed(6)) })),
      };
    }),
  );
}
