import { createScriptedChatModel, InMemoryUsageSink } from "../llm/index.ts";
import type { ScriptDefinition } from "../llm/index.ts";
import type { ExperimentOutcome, StagePlan, StageRecord } from "../leader/domain/planner.ts";
import { parseTopic, type Topic } from "../leader/domain/topic.ts";

/**
 * Shared by the llm planner's tests: a topic, scripted models, answers in the shapes of
 * leader/planners/llm/answers.ts, and a made-up world that turns a plan into outcomes.
 */
export function llmTestTopic(budgets = "budgets: { stages: 3, experiments: 30 }", seeds = 2): Topic {
  return parseTopic(
    `---\ntitle: Which lr trains fastest?\nmetric: { name: reward, goal: maximize, score: final }\nbase: { codebase: /c, interpreter: /usr/bin/node, config: /c/x.yaml, command: node train.js, time_budget: 10m, gpus: 1 }\nknobs:\n  lr: [0.2, 0.05, 0.5]\n  batch: [8, 16]\nseeds: ${seeds}\n${budgets}\n---\nWhich learning rate gives the highest final reward?\n`,
  );
}

export function scriptedModel(steps: ScriptDefinition) {
  const sink = new InMemoryUsageSink();
  return { model: createScriptedChatModel(steps, { sink }), sink };
}

type Delta = { knob: string; value: number | string | boolean }[];

export function configurationAnswer(
  label: string,
  delta: Delta,
  prediction: { kind: "beats-configuration" | "above-level" | "records"; against?: string; level?: number },
  hypothesis = "H1",
) {
  return {
    label,
    hypothesis,
    purpose: `try ${label}`,
    delta,
    prediction: { kind: prediction.kind, text: `${label}: ${prediction.kind}`, against: prediction.against ?? null, level: prediction.level ?? null },
  };
}

export function planAnswer(configurations: ReturnType<typeof configurationAnswer>[], kind: "screen" | "refine" = "screen") {
  return {
    decision: "continue",
    reasons: [],
    stop: null,
    plan: {
      kind,
      rationale: "screen lr against the baseline",
      hypotheses: [
        { id: "H0", statement: "the baseline trains" },
        { id: "H1", statement: "a smaller lr is better" },
      ],
      configurations,
      decisions: [
        { outcome: "small lr beats the baseline beyond noise", decision: "refine around it" },
        { outcome: "otherwise", decision: "stop" },
      ],
    },
  };
}

export const screenAnswer = planAnswer([
  configurationAnswer("base", [], { kind: "records" }, "H0"),
  configurationAnswer("small-lr", [{ knob: "lr", value: 0.05 }], { kind: "beats-configuration", against: "base" }),
]);

export function stopAnswer(reason: string, explanation: string, reasons: string[] = []) {
  return { decision: "stop", reasons, stop: { reason, explanation }, plan: null };
}

export const planStep = (parsed: unknown) => ({ match: { role: "plan" }, parsed });

/** Every experiment succeeds with score = base score of its configuration + a seed wobble; `reasons` fail some. */
export function runStage(plan: StagePlan, scores: Record<string, number>, reasons: Record<string, string> = {}): StageRecord {
  const outcomes: ExperimentOutcome[] = plan.experiments.map((experiment) => {
    const reason = reasons[experiment.blueprintId];
    if (reason !== undefined) return { ...experiment, state: "failed", score: undefined, reason };
    return { ...experiment, state: "succeeded", score: scores[experiment.configurationId]! + 0.01 * (experiment.seed - 1) };
  });
  return { plan, outcomes };
}
