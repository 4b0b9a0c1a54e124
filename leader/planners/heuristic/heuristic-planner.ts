import { parseDuration } from "../../../core/duration.ts";
import {
  baselineSettings,
  bestConfiguration,
  blueprintIdOf,
  formatNumber,
  isBetter,
  makeConfiguration,
  separatedFromRest,
  summarizeConfigurations,
  type Goal,
} from "../../domain/configurations.ts";
import { scoreLabel } from "../../domain/score-label.ts";
import type { ConfigurationSummary, PlannedConfiguration, Planner, PlannerInput, PlannerStep, StagePlan } from "../../domain/planner.ts";
import { applyInstructions } from "./instructions.ts";
import { refinementCandidates } from "./refinement.ts";
import { heuristicNeeds, type Topic, type TopicMetric } from "../../domain/topic.ts";

/**
 * The deterministic planner. Stage 1 screens: the baseline (each knob at its first value)
 * and one factor at a time (each other value of each knob, the rest at baseline). Later
 * stages refine around the best configuration so far (leader/planners/heuristic/refinement.ts). After each
 * stage, in this order, it stops when:
 *
 * 1. the topic lacks what it needs (metric, base experiment, knobs): it says what to add;
 * 2. no experiment of the last stage produced a score;
 * 3. the best configuration is better than every other beyond seed noise (after the
 *    screen, only when no refinement around it can run: the screen's values are coarse);
 * 4. (from stage 2) the last stage's best does not beat the best of the stages before it;
 * 5. there is nothing left to try around the best;
 * 6. the next stage would exceed a budget (stages, experiments, GPU-hours, wall time).
 *
 * A refinement stage that does not fit the experiment budget whole is cut to the
 * configurations that fit (in candidate order); it stops only when not one fits.
 * Same input, same output: no clock, no randomness.
 */
export class HeuristicPlanner implements Planner {
  readonly name = "heuristic";

  async next(input: PlannerInput): Promise<PlannerStep> {
    return planNext(input);
  }
}

export function planNext(input: PlannerInput): PlannerStep {
  const reviewed = applyInstructions(input.topic, input.instructions);
  const step = planWithTopic({ ...input, topic: reviewed.topic });
  if (step.kind === "stop" || (reviewed.applied.length === 0 && reviewed.notUnderstood.length === 0)) return step;
  const notes = [
    ...(reviewed.applied.length > 0 ? [`reviewer instructions applied: ${reviewed.applied.join("; ")}`] : []),
    ...(reviewed.notUnderstood.length > 0
      ? [
          `not understood by the heuristic planner (it takes "seeds=N" and "drop <knob>=<value>"; the llm planner reads text): ${reviewed.notUnderstood.join("; ")}`,
        ]
      : []),
  ];
  return { ...step, plan: { ...step.plan, rationale: `${step.plan.rationale}; ${notes.join("; ")}` } };
}

function planWithTopic(input: PlannerInput): PlannerStep {
  const { topic, history } = input;
  const needs = heuristicNeeds(topic);
  if (needs.length > 0) {
    return stop("needs-input", `the heuristic planner cannot plan "${topic.title}" yet: ${needs.join("; ")}`, undefined, { needs });
  }
  const metric = topic.metric!;
  const goal = metric.goal;
  const summaries = summarizeConfigurations(history);
  const best = bestConfiguration(summaries, goal);
  const stageNumber = history.length + 1;
  const separated =
    history.length > 0 && best && separatedFromRest(best, summaries, goal)
      ? stop(
          "separated",
          `${best.configuration.id} (mean ${formatNumber(best.sample.mean)}, 95% interval ${interval(best)}) is better than every other configuration beyond seed noise`,
          best,
          evidenceOf(summaries),
        )
      : null;

  if (history.length > 0) {
    const last = history[history.length - 1]!;
    const scored = last.outcomes.filter((outcome) => outcome.state === "succeeded" && outcome.score !== undefined);
    if (scored.length === 0) {
      const reasons = last.outcomes.map((outcome) => `${outcome.blueprintId}: ${outcome.state}${outcome.reason ? ` (${outcome.reason})` : ""}`);
      return stop("stage-failed", `no experiment of stage ${last.plan.stage} recorded a score of ${metric.name}`, best, { failures: reasons });
    }
    if (separated !== null && history.length >= 2) return separated;
    if (history.length >= 2) {
      const earlier = summarizeConfigurations(history.slice(0, -1));
      const earlierBest = bestConfiguration(earlier, goal);
      const lastIds = new Set(last.plan.configurations.map((configuration) => configuration.id));
      const lastBest = bestConfiguration(
        summaries.filter((summary) => lastIds.has(summary.configuration.id) && summary.stage === last.plan.stage),
        goal,
      );
      if (earlierBest && (!lastBest || !isBetter(lastBest.sample.mean, earlierBest.sample.mean, goal))) {
        return stop(
          "no-improvement",
          `stage ${last.plan.stage} brought no improvement: its best ${lastBest ? `${lastBest.configuration.id} (mean ${formatNumber(lastBest.sample.mean)})` : "(none)"} does not beat ${earlierBest.configuration.id} (mean ${formatNumber(earlierBest.sample.mean)})`,
          best,
          evidenceOf(summaries),
        );
      }
    }
  }

  const plan = history.length === 0 ? screenStage(topic, metric) : refineStage(topic, metric, stageNumber, summaries, best!);
  const step =
    plan.configurations.length === 0
      ? stop("exhausted", `nothing left to try around ${best?.configuration.id ?? "the baseline"}: every candidate was measured`, best, evidenceOf(summaries))
      : checkBudgets(input, plan, best, summaries);
  // A screen's clear winner is still refined around while the budgets allow (the screen's
  // values are coarse); when nothing more can run, the separation is why it stops.
  return step.kind === "stop" && separated !== null ? separated : step;
}

function screenStage(topic: Topic, metric: TopicMetric): StagePlan {
  const baseline = baselineSettings(topic.knobs);
  const scoreName = scoreLabel(metric);
  const baselineText = Object.entries(baseline)
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(", ");
  const configurations: PlannedConfiguration[] = [
    {
      ...makeConfiguration(baseline, baseline),
      hypothesis: "H0",
      purpose: `the baseline (${baselineText}): the reference every other configuration of the screen is compared with`,
      prediction:
        metric.reference === undefined
          ? { kind: "records", text: `the runs record finite values of ${metric.name}` }
          : {
              kind: "above-level",
              level: metric.reference,
              text: `mean ${scoreName} ${comparatorWord(metric.goal)} ${formatNumber(metric.reference)} (the reference level)`,
            },
    },
  ];
  const hypotheses = [{ id: "H0", statement: `the baseline (${baselineText}) trains: ${configurations[0]!.prediction.text}` }];
  Object.entries(topic.knobs).forEach(([name, values], index) => {
    const hypothesis = `H${index + 1}`;
    hypotheses.push({
      id: hypothesis,
      statement: `${name} matters: some value other than ${String(values[0])} gives a ${betterWord(metric.goal)} ${scoreName} than the baseline`,
    });
    for (const value of values.slice(1)) {
      const configuration = makeConfiguration({ ...baseline, [name]: value }, baseline);
      if (configurations.some((existing) => existing.id === configuration.id)) continue;
      configurations.push({
        ...configuration,
        hypothesis,
        purpose: `one factor at a time: ${name} ${String(values[0])} → ${String(value)}, every other knob at its baseline value`,
        prediction: {
          kind: "beats-configuration",
          configurationId: "baseline",
          text: `mean ${scoreName} across seeds is ${betterWord(metric.goal)} than the baseline's`,
        },
      });
    }
  });
  return {
    stage: 1,
    kind: "screen",
    rationale: `screen each knob one factor at a time against the baseline, ${topic.seeds} seed(s) per configuration, to find which knobs move ${scoreName}`,
    hypotheses,
    configurations,
    experiments: experimentsOf(1, configurations, topic.seeds),
    decisions: commonDecisions(1, "the baseline"),
  };
}

function refineStage(topic: Topic, metric: TopicMetric, stage: number, summaries: ConfigurationSummary[], best: ConfigurationSummary): StagePlan {
  const baseline = baselineSettings(topic.knobs);
  const scoreName = scoreLabel(metric);
  const hypothesis = `H${stage}-refine`;
  const configurations: PlannedConfiguration[] = refinementCandidates(topic.knobs, summaries, metric.goal).map((candidate) => ({
    ...makeConfiguration(candidate.settings, baseline),
    hypothesis,
    purpose: candidate.purpose,
    prediction: {
      kind: "beats-configuration",
      configurationId: best.configuration.id,
      text: `mean ${scoreName} across seeds is ${betterWord(metric.goal)} than ${best.configuration.id}'s ${formatNumber(best.sample.mean)}`,
    },
  }));
  return {
    stage,
    kind: "refine",
    rationale: `refine around the best so far, ${best.configuration.id} (mean ${formatNumber(best.sample.mean)}, 95% interval ${interval(best)}), which is not separated from the rest beyond seed noise`,
    hypotheses: [
      {
        id: hypothesis,
        statement: `a configuration near ${best.configuration.id} gives a ${betterWord(metric.goal)} ${scoreName} than its ${formatNumber(best.sample.mean)}`,
      },
    ],
    configurations,
    experiments: experimentsOf(stage, configurations, topic.seeds),
    decisions: commonDecisions(stage, best.configuration.id),
  };
}

function commonDecisions(stage: number, reference: string): StagePlan["decisions"] {
  return [
    { outcome: "every experiment of the stage fails or records no score", decision: "stop and report the failures with their reasons" },
    {
      outcome: "the best configuration is better than every other beyond seed noise (95% intervals do not overlap)",
      decision: "stop and report it as the answer",
    },
    ...(stage >= 2
      ? [{ outcome: `no configuration of this stage beats ${reference}'s mean`, decision: `stop: refinement brought no improvement; report ${reference}` }]
      : []),
    { outcome: "otherwise", decision: `refine around the best in stage ${stage + 1}, if something is left to try and the budgets allow it` },
  ];
}

function checkBudgets(input: PlannerInput, plan: StagePlan, best: ConfigurationSummary | undefined, summaries: ConfigurationSummary[]): PlannerStep {
  const { topic, history, usage } = input;
  const budgets = topic.budgets;
  const base = topic.base!;
  const evidence = { ...evidenceOf(summaries), planned: plan.experiments.length };
  if (plan.stage > budgets.stages) return stop("budget", `stage ${plan.stage} would exceed the budget of ${budgets.stages} stage(s)`, best, evidence);
  const used = history.reduce((sum, record) => sum + record.plan.experiments.length, 0);
  const room = budgets.experiments - used;
  const fitting = Math.floor(room / topic.seeds);
  if (plan.configurations.length > fitting) {
    if (plan.kind === "screen" || fitting < 1) {
      return stop(
        "budget",
        `stage ${plan.stage} needs ${plan.experiments.length} experiments but only ${Math.max(0, room)} of the budget of ${budgets.experiments} remain`,
        best,
        evidence,
      );
    }
    const kept = plan.configurations.slice(0, fitting);
    plan = {
      ...plan,
      configurations: kept,
      experiments: experimentsOf(plan.stage, kept, topic.seeds),
      rationale: `${plan.rationale}; cut to ${kept.length} configuration(s) to fit the experiment budget`,
    };
  }
  const budgetMs = parseDuration(base.time_budget) ?? 0;
  if (budgets.gpuHours !== undefined) {
    const estimate = (plan.experiments.length * base.gpus * budgetMs) / 3_600_000;
    if (usage.gpuHours + estimate > budgets.gpuHours) {
      return stop(
        "budget",
        `stage ${plan.stage} could use ${formatNumber(estimate)} GPU-hours (its time budgets), over the ${formatNumber(budgets.gpuHours - usage.gpuHours)} left`,
        best,
        { ...evidence, gpuHoursUsed: usage.gpuHours },
      );
    }
  }
  if (budgets.wallTimeMs !== undefined && usage.wallTimeMs + budgetMs > budgets.wallTimeMs) {
    return stop(
      "budget",
      `stage ${plan.stage} could take ${base.time_budget}, over the wall time left (${formatNumber((budgets.wallTimeMs - usage.wallTimeMs) / 60_000)} min)`,
      best,
      { ...evidence, wallTimeUsedMs: usage.wallTimeMs },
    );
  }
  return { kind: "stage", plan };
}

function experimentsOf(stage: number, configurations: PlannedConfiguration[], seeds: number): StagePlan["experiments"] {
  return configurations.flatMap((configuration) =>
    Array.from({ length: seeds }, (_, index) => ({
      blueprintId: blueprintIdOf(stage, configuration.id, index + 1),
      configurationId: configuration.id,
      seed: index + 1,
    })),
  );
}

function stop(
  reason: Extract<PlannerStep, { kind: "stop" }>["reason"],
  explanation: string,
  best: ConfigurationSummary | undefined,
  evidence: Record<string, unknown>,
): PlannerStep {
  return { kind: "stop", reason, explanation, best, evidence };
}

function evidenceOf(summaries: ConfigurationSummary[]): Record<string, unknown> {
  return {
    configurations: summaries.map((summary) => ({
      id: summary.configuration.id,
      n: summary.sample.n,
      mean: summary.sample.mean,
      low: summary.sample.low,
      high: summary.sample.high,
      failed: summary.failed,
    })),
  };
}

function interval(summary: ConfigurationSummary): string {
  return summary.sample.low === undefined ? "n/a (one seed)" : `[${formatNumber(summary.sample.low)}, ${formatNumber(summary.sample.high)}]`;
}

function betterWord(goal: Goal): string {
  return goal === "maximize" ? "higher" : "lower";
}

function comparatorWord(goal: Goal): string {
  return goal === "maximize" ? ">" : "<";
}
