import { describe, expect, it } from "vitest";
import type { MetricsRecord } from "../../campaign/index.ts";
import type { StagePlan } from "../domain/planner.ts";
import { parseTopic, type Topic } from "../domain/topic.ts";
import { planNext } from "../planners/heuristic/heuristic-planner.ts";
import { analyzeStageResults, type RunRead } from "./analyze-stage.ts";
import { renderAnalysis } from "./analysis-markdown.ts";

function topicWith(extra: string): Topic {
  return parseTopic(
    `---\nmetric: { name: reward_mean, goal: maximize, score: final }\nbase: { codebase: /c, interpreter: node, config: /c/x.yaml, command: run, time_budget: 10m, gpus: 0 }\nknobs:\n  num_repeat: [4, 16]\nseeds: 2\n${extra}\n---\nDoes a larger group train better?\n`,
  );
}

/** A run whose reward rises by `perEpisode` with every episode it consumed, `episodes` per step. */
function runOf(blueprintId: string, episodes: number, perEpisode: number, steps: number): RunRead {
  const records = Array.from({ length: steps }, (_, index) => ({
    step: index + 1,
    time: new Date(Date.UTC(2026, 11, 1, 10, 0, index)).toISOString(),
    episodes,
    tokens: episodes * 20,
    step_time_s: 1,
    reward_mean: Math.min(1, (index + 1) * episodes * perEpisode),
  })) as unknown as MetricsRecord[];
  return { blueprintId, state: "succeeded", reason: undefined, records };
}

function screen(topic: Topic): StagePlan {
  const step = planNext({ topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
  if (step.kind !== "stage") throw new Error(step.explanation);
  return step.plan;
}

/** num_repeat 16 takes 4x the episodes of 4 per step, and learns the same per episode. */
function readsFor(plan: StagePlan): RunRead[] {
  return plan.experiments.map((experiment) => {
    const big = plan.configurations.find((item) => item.id === experiment.configurationId)!.settings.num_repeat === 16;
    return runOf(experiment.blueprintId, big ? 64 : 16, 0.001 + 0.00001 * experiment.seed, 10);
  });
}

describe("compute-fair stage analysis", () => {
  it("compares a knob that changes data per step at equal episodes by default: equal learning per episode is a tie", () => {
    const topic = topicWith("");
    expect(topic.budgetAxis).toBe("episodes");
    const plan = screen(topic);
    const analysis = analyzeStageResults(topic, plan, [], readsFor(plan), (id) => `/r/${id}`);
    expect(analysis.axis).toMatchObject({ name: "episodes", budget: 160 });
    const means = analysis.configurations.map((item) => item.mean!);
    // Both reach about 0.16 at 160 episodes, though per step one looks four times better.
    expect(Math.abs(means[0]! - means[1]!)).toBeLessThan(0.01);
    expect(renderAnalysis(analysis, topic, "/c")).toContain("Compared at equal rollout episodes: every run up to 160");
  });

  it("says per step is confounded when the topic asks for steps anyway", () => {
    const topic = topicWith("budget_axis: steps");
    const plan = screen(topic);
    const analysis = analyzeStageResults(topic, plan, [], readsFor(plan), (id) => `/r/${id}`);
    expect(analysis.axis?.confound).toMatch(/consumes 64 rollout episodes per step and .* 16/);
    const means = analysis.configurations.map((item) => item.mean!);
    expect(Math.max(...means) / Math.min(...means)).toBeGreaterThan(3);
    expect(renderAnalysis(analysis, topic, "/c")).toContain("**Confound:**");
  });

  it("refuses an unknown axis with the values it takes", () => {
    expect(() => topicWith("budget_axis: epochs")).toThrow(/budget_axis/);
  });
});
