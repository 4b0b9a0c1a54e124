import { parseDuration } from "../../../core/duration.ts";
import { baselineSettings, bestConfiguration, blueprintIdOf, formatNumber, makeConfiguration, summarizeConfigurations } from "../../domain/configurations.ts";
import type { StageDecisionAnswer, StagePlanAnswer } from "./answers.ts";
import type {
  ConfigurationSummary,
  FramedQuestion,
  PlannedConfiguration,
  PlannerInput,
  PlannerStep,
  Prediction,
  StagePlan,
  StopReason,
} from "../../domain/planner.ts";
import type { KnobValue, Topic } from "../../domain/topic.ts";

/**
 * Turns the model's stage decision into a PlannerStep, in code: the model names knobs and
 * values and says what it predicts; ids, experiments, seeds and budgets are computed here,
 * so a plan from the model is as valid as the heuristic planner's. Pure.
 *
 * Checks, each reported as a problem the model can fix when asked again:
 * - every knob of a delta is a known knob (the topic's, or the framing's when the topic
 *   has none), with a value of the same type as the topic's candidates;
 * - labels, hypothesis ids and resulting configuration ids are unique; each
 *   configuration tests a hypothesis of the plan;
 * - a `beats-configuration` prediction names a configuration of this plan (by label or
 *   id) or one measured before, never itself; `above-level` gives a finite level;
 * - the answer's parts match its decision (a plan to continue or revise, a stop reason
 *   to stop; reasons to revise or stop; no stop for results at stage 1 except needs-input).
 */
export type PlanConversion = { ok: true; step: PlannerStep } | { ok: false; problems: string[] };

/** The knobs a plan may vary, first value = baseline: the topic's, else the framing's variables. */
export function knobsOf(topic: Topic, framing: FramedQuestion | undefined): Record<string, KnobValue[]> {
  if (Object.keys(topic.knobs).length > 0) return topic.knobs;
  const fromFraming: Record<string, KnobValue[]> = {};
  for (const variable of framing?.variables ?? []) if (variable.values.length > 0) fromFraming[variable.name] = variable.values;
  return fromFraming;
}

/** What the topic lacks before any stage can be written as blueprints; empty when it can. */
export function llmPlannerNeeds(topic: Topic, knobs: Record<string, KnobValue[]>): string[] {
  const needs: string[] = [];
  if (!topic.metric) needs.push("add `metric: { name: <metric in metrics.jsonl>, goal: maximize|minimize }` to the topic");
  if (!topic.base) needs.push("describe the base experiment in the topic: `base: { codebase, interpreter, config, command, time_budget }` with absolute paths");
  if (Object.keys(knobs).length === 0) needs.push("name the config keys to vary: `knobs: { lr: [0.2, 0.05, 0.5] }` in the topic (or a framing with variables)");
  return needs;
}

export function convertDecision(answer: StageDecisionAnswer, input: PlannerInput, knobs: Record<string, KnobValue[]>): PlanConversion {
  const problems: string[] = [];
  const stage = input.history.length + 1;
  const reasons = answer.reasons.map((reason) => reason.trim()).filter((reason) => reason !== "");
  const summaries = summarizeConfigurations(input.history);
  const best = input.topic.metric ? bestConfiguration(summaries, input.topic.metric.goal) : undefined;

  if (answer.decision === "stop") {
    if (!answer.stop) return { ok: false, problems: ["decision is stop but `stop` is null: give the stop reason and its explanation"] };
    if (stage === 1 && answer.stop.reason !== "needs-input")
      problems.push(
        `no stage has run yet, so "${answer.stop.reason}" cannot be the stop reason: plan stage 1, or stop with needs-input saying what the topic lacks`,
      );
    if (answer.stop.explanation.trim() === "") problems.push("stop.explanation is empty: say why the campaign stops, citing the figures");
    if (problems.length > 0) return { ok: false, problems };
    const explanation = [answer.stop.explanation.trim(), ...reasons.filter((reason) => reason !== answer.stop!.explanation.trim())].join(" ");
    return { ok: true, step: stopStep(answer.stop.reason, explanation, best, { ...evidenceOf(summaries), decidedBy: "model", reasons }) };
  }
  if (!answer.plan) return { ok: false, problems: [`decision is ${answer.decision} but \`plan\` is null: give the next stage`] };
  if (answer.decision === "revise" && reasons.length === 0)
    problems.push("decision is revise but `reasons` is empty: say why the course changes, citing the figures");
  const converted = convertPlan(answer.plan, stage, input, knobs, summaries);
  problems.push(...converted.problems);
  if (problems.length > 0 || !converted.plan) return { ok: false, problems };
  const plan =
    answer.decision === "revise" ? { ...converted.plan, rationale: `revised course (${reasons.join("; ")}): ${converted.plan.rationale}` } : converted.plan;
  return { ok: true, step: checkStageBudgets(input, plan, best, summaries) };
}

function convertPlan(
  answer: StagePlanAnswer,
  stage: number,
  input: PlannerInput,
  knobs: Record<string, KnobValue[]>,
  summaries: ConfigurationSummary[],
): { plan?: StagePlan; problems: string[] } {
  const problems: string[] = [];
  const baseline = baselineSettings(knobs);
  const knownKnobs = Object.keys(knobs);
  if (answer.rationale.trim() === "") problems.push("plan.rationale is empty: say why this stage, in a sentence");
  if (answer.configurations.length === 0) problems.push("plan.configurations is empty: a stage runs at least one configuration");
  if (answer.decisions.length === 0) problems.push("plan.decisions is empty: say what each outcome of the stage leads to (at least an `otherwise`)");

  const hypothesisIds = new Set<string>();
  for (const hypothesis of answer.hypotheses) {
    if (hypothesis.id.trim() === "" || hypothesis.statement.trim() === "") problems.push("every hypothesis needs an id and a statement");
    else if (hypothesisIds.has(hypothesis.id)) problems.push(`hypothesis id "${hypothesis.id}" appears twice`);
    hypothesisIds.add(hypothesis.id);
  }

  // First pass: settings and ids, so that predictions can refer to any configuration of the plan.
  const built: { label: string; configuration: ReturnType<typeof makeConfiguration> }[] = [];
  answer.configurations.forEach((item, index) => {
    const where = `configuration ${index + 1} ("${item.label}")`;
    if (item.label.trim() === "") problems.push(`configuration ${index + 1} has an empty label`);
    else if (built.some((other) => other.label === item.label)) problems.push(`label "${item.label}" is used by two configurations`);
    if (!hypothesisIds.has(item.hypothesis))
      problems.push(`${where} tests hypothesis "${item.hypothesis}", which is not among the plan's hypotheses (${[...hypothesisIds].join(", ") || "none"})`);
    if (item.purpose.trim() === "") problems.push(`${where} has an empty purpose`);
    const settings = { ...baseline };
    const seen = new Set<string>();
    for (const { knob, value } of item.delta) {
      if (!Object.hasOwn(knobs, knob)) {
        problems.push(`${where} sets knob "${knob}", which is not a knob of this campaign (known knobs: ${knownKnobs.join(", ")})`);
        continue;
      }
      if (seen.has(knob)) problems.push(`${where} sets knob "${knob}" twice`);
      seen.add(knob);
      const expected = typeof knobs[knob]![0];
      if (typeof value !== expected)
        problems.push(
          `${where} sets ${knob} to ${JSON.stringify(value)} (a ${typeof value}), but ${knob} takes ${expected} values such as ${JSON.stringify(knobs[knob]![0])}`,
        );
      settings[knob] = value;
    }
    const configuration = makeConfiguration(settings, baseline);
    const twin = built.find((other) => other.configuration.id === configuration.id);
    if (twin) problems.push(`${where} has the same settings as "${twin.label}" (${configuration.id}); each configuration must differ`);
    built.push({ label: item.label, configuration });
  });

  const measured = new Set(summaries.map((summary) => summary.configuration.id));
  const configurations: PlannedConfiguration[] = answer.configurations.map((item, index) => {
    const { configuration } = built[index]!;
    const where = `configuration ${index + 1} ("${item.label}")`;
    const prediction = resolvePrediction(item.prediction, configuration.id, built, measured, where, problems);
    return { ...configuration, hypothesis: item.hypothesis, purpose: item.purpose.trim(), prediction };
  });
  if (problems.length > 0) return { problems };
  const plan: StagePlan = {
    stage,
    kind: answer.kind,
    rationale: answer.rationale.trim(),
    hypotheses: answer.hypotheses.map((hypothesis) => ({ id: hypothesis.id, statement: hypothesis.statement.trim() })),
    configurations,
    experiments: experimentsOf(stage, configurations, input.topic.seeds, input.history),
    decisions: answer.decisions.map((decision) => ({ outcome: decision.outcome.trim(), decision: decision.decision.trim() })),
  };
  return { plan, problems };
}

function resolvePrediction(
  answer: StagePlanAnswer["configurations"][number]["prediction"],
  ownId: string,
  built: { label: string; configuration: { id: string } }[],
  measured: Set<string>,
  where: string,
  problems: string[],
): Prediction {
  const text = answer.text.trim();
  if (text === "") problems.push(`${where}: prediction.text is empty; state what result would refute it`);
  if (answer.kind === "records") return { kind: "records", text };
  if (answer.kind === "above-level") {
    if (answer.level === null || !Number.isFinite(answer.level)) problems.push(`${where}: an above-level prediction needs a finite \`level\``);
    return { kind: "above-level", text, level: answer.level ?? Number.NaN };
  }
  const target = answer.against?.trim() ?? "";
  const inPlan = built.find((item) => item.label === target) ?? built.find((item) => item.configuration.id === target);
  const resolved = inPlan?.configuration.id ?? (measured.has(target) ? target : undefined);
  if (target === "") problems.push(`${where}: a beats-configuration prediction needs \`against\` (a label of this plan or a configuration measured before)`);
  else if (resolved === undefined) {
    const known = [...built.map((item) => item.label), ...measured];
    problems.push(
      `${where}: prediction cites configuration "${target}", which is neither in this plan nor measured before (known: ${known.join(", ") || "none"})`,
    );
  } else if (resolved === ownId) problems.push(`${where}: its prediction compares it with itself ("${target}")`);
  return { kind: "beats-configuration", text, configurationId: resolved ?? target };
}

/**
 * A configuration measured again (a control repeated in a later stage) gets the seeds after
 * the highest it has used: the same seed twice would be the same run counted as two samples,
 * narrowing its interval with no new information.
 */
function experimentsOf(stage: number, configurations: PlannedConfiguration[], seeds: number, history: PlannerInput["history"]): StagePlan["experiments"] {
  return configurations.flatMap((configuration) => {
    const used = history
      .flatMap((record) => record.plan.experiments)
      .filter((experiment) => experiment.configurationId === configuration.id)
      .map((experiment) => experiment.seed);
    const first = used.length === 0 ? 1 : Math.max(...used) + 1;
    return Array.from({ length: seeds }, (_, index) => ({
      blueprintId: blueprintIdOf(stage, configuration.id, first + index),
      configurationId: configuration.id,
      seed: first + index,
    }));
  });
}

/**
 * The budgets, for a stage of `experiments` runs: stages, experiments, GPU-hours (each
 * run counted at its full time budget) and wall time (one time budget per stage, runs in
 * parallel). A stage that does not fit whole stops the campaign: unlike the heuristic
 * planner, nothing here decides which of the model's configurations to drop.
 */
export function budgetProblem(input: PlannerInput, stage: number, experiments: number): { explanation: string; evidence: Record<string, unknown> } | undefined {
  const { topic, history, usage } = input;
  const budgets = topic.budgets;
  if (stage > budgets.stages)
    return { explanation: `stage ${stage} would exceed the budget of ${budgets.stages} stage(s)`, evidence: { stages: budgets.stages } };
  const used = history.reduce((sum, record) => sum + record.plan.experiments.length, 0);
  const room = budgets.experiments - used;
  if (experiments > room)
    return {
      explanation: `stage ${stage} needs ${experiments} experiments but only ${Math.max(0, room)} of the budget of ${budgets.experiments} remain`,
      evidence: { planned: experiments, used },
    };
  const budgetMs = topic.base ? (parseDuration(topic.base.time_budget) ?? 0) : 0;
  if (budgets.gpuHours !== undefined && topic.base) {
    const estimate = (experiments * topic.base.gpus * budgetMs) / 3_600_000;
    if (usage.gpuHours + estimate > budgets.gpuHours) {
      return {
        explanation: `stage ${stage} could use ${formatNumber(estimate)} GPU-hours (its time budgets), over the ${formatNumber(budgets.gpuHours - usage.gpuHours)} left`,
        evidence: { planned: experiments, gpuHoursUsed: usage.gpuHours },
      };
    }
  }
  if (budgets.wallTimeMs !== undefined && usage.wallTimeMs + budgetMs > budgets.wallTimeMs) {
    return {
      explanation: `stage ${stage} could take ${String(topic.base?.time_budget)}, over the wall time left (${formatNumber((budgets.wallTimeMs - usage.wallTimeMs) / 60_000)} min)`,
      evidence: { wallTimeUsedMs: usage.wallTimeMs },
    };
  }
  return undefined;
}

function checkStageBudgets(input: PlannerInput, plan: StagePlan, best: ConfigurationSummary | undefined, summaries: ConfigurationSummary[]): PlannerStep {
  const over = budgetProblem(input, plan.stage, plan.experiments.length);
  if (!over) return { kind: "stage", plan };
  return stopStep("budget", `${over.explanation} (the model proposed ${plan.configurations.length} configuration(s) × ${input.topic.seeds} seed(s))`, best, {
    ...evidenceOf(summaries),
    ...over.evidence,
    proposed: plan.configurations.map((item) => item.id),
  });
}

export function stopStep(reason: StopReason, explanation: string, best: ConfigurationSummary | undefined, evidence: Record<string, unknown>): PlannerStep {
  return { kind: "stop", reason, explanation, best, evidence };
}

export function evidenceOf(summaries: ConfigurationSummary[]): Record<string, unknown> {
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
