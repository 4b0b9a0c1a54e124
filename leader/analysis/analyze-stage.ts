import { join } from "node:path";
import { readResultDir } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { writeRedactedFile } from "../../core/redact.ts";
import { pathExists } from "../../core/path-exists.ts";
import { bestConfiguration, formatNumber, isBetter, seedScores, summarizeConfigurations, type SeedScores } from "../domain/configurations.ts";
import type { ConfigurationSummary, ExperimentOutcome, Prediction, StagePlan, StageRecord } from "../domain/planner.ts";
import { renderAnalysis } from "./analysis-markdown.ts";
import type { ExperimentAnalysis, PredictionVerdict, RunRead, StageAnalysis } from "./stage-analysis.ts";
export type { ExperimentAnalysis, PredictionVerdict, RunRead, StageAnalysis } from "./stage-analysis.ts";
import { comparePair } from "../domain/incumbent.ts";
import { campaignRanking, currentLook } from "../planners/heuristic/heuristic-planner.ts";
import { oneSidedBound, summarizeCurve, withinRange, type CurvePoint } from "../domain/statistics.ts";
import { axisUnits, commonBudget, curveOnAxis, perStep, stepConfound, truncateAt } from "./budget-axis.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * Every experiment's curve on the topic's budget axis, cut at the budget all the stage's
 * runs reached (the comparison is at equal spend); a run that does not record what a step
 * consumed stays on steps, and is named. With the axis at steps, whether that is
 * confounded: configurations that consume more than 10% more episodes per step.
 */
function curvesOnAxis(topic: Topic, plan: StagePlan, reads: RunRead[]): { curves: Map<string, CurvePoint[]>; axis: StageAnalysis["axis"] } {
  const metric = topic.metric!;
  const axis = topic.budgetAxis;
  const curves = new Map<string, CurvePoint[]>();
  const onSteps: string[] = [];
  const perConfiguration = new Map<string, number[]>();
  for (const experiment of plan.experiments) {
    const records = reads.find((item) => item.blueprintId === experiment.blueprintId)?.records ?? [];
    const stepsCurve = curveOnAxis(records, metric.name, "steps") ?? [];
    const curve = axis === "steps" ? stepsCurve : curveOnAxis(records, metric.name, axis, topic.base?.gpus ?? 1);
    if (curve === undefined && records.length > 0) onSteps.push(experiment.blueprintId);
    curves.set(experiment.blueprintId, curve ?? stepsCurve);
    const episodes = perStep(records, "episodes");
    if (episodes !== undefined) perConfiguration.set(experiment.configurationId, [...(perConfiguration.get(experiment.configurationId) ?? []), episodes]);
  }
  let budget: number | undefined;
  if (axis !== "steps") {
    const measured = plan.experiments
      .filter((experiment) => !onSteps.includes(experiment.blueprintId))
      .map((experiment) => curves.get(experiment.blueprintId)!);
    budget = commonBudget(measured);
    if (budget !== undefined) for (const [id, curve] of curves) if (!onSteps.includes(id)) curves.set(id, truncateAt(curve, budget));
  }
  const means = new Map([...perConfiguration].map(([id, values]) => [id, values.reduce((sum, value) => sum + value, 0) / values.length]));
  const spread = stepConfound(means);
  const confound =
    axis === "steps" && spread?.confounded
      ? `compared per optimizer step, but ${spread.highest[0]} consumes ${formatNumber(spread.highest[1])} rollout episodes per step and ${spread.lowest[0]} ${formatNumber(spread.lowest[1])}: at equal steps they did not see equal data (set budget_axis: episodes to compare at equal episodes)`
      : undefined;
  return { curves, axis: { name: axis, unit: axisUnits[axis], budget, onSteps, ...(confound ? { confound } : {}) } };
}

/** Pure: the analysis from what was read. `history` holds the stages before this one. */
export function analyzeStageResults(
  topic: Topic,
  plan: StagePlan,
  history: StageRecord[],
  reads: RunRead[],
  resultDirOf: (blueprintId: string) => string,
): StageAnalysis {
  const metric = topic.metric!;
  const onAxis = curvesOnAxis(topic, plan, reads);
  const experiments: ExperimentAnalysis[] = plan.experiments.map((experiment) => {
    const read = reads.find((item) => item.blueprintId === experiment.blueprintId);
    const points = onAxis.curves.get(experiment.blueprintId) ?? [];
    const curve = summarizeCurve(points, metric.goal);
    const score = metric.score === "final" ? curve.final : metric.score === "best" ? curve.best : curve.normalizedArea;
    const state = read?.state ?? "missing";
    const reason =
      read?.reason ??
      (state === "missing"
        ? "no result directory"
        : state === "succeeded" && score === undefined
          ? `no finite value of ${metric.name} was recorded`
          : undefined);
    return {
      blueprintId: experiment.blueprintId,
      configurationId: experiment.configurationId,
      seed: experiment.seed,
      state,
      reason,
      curve,
      score,
      resultDir: resultDirOf(experiment.blueprintId),
    };
  });
  const outcomes: ExperimentOutcome[] = experiments.map((experiment) => ({
    blueprintId: experiment.blueprintId,
    configurationId: experiment.configurationId,
    seed: experiment.seed,
    state: outcomeState(experiment.state),
    score: experiment.score,
    ...(experiment.reason === undefined ? {} : { reason: experiment.reason }),
  }));
  // Every stage so far, judged at the planner's look (its level and pairing): the analysis shows what the planner decides from.
  const judged = [...history, { plan, outcomes }];
  const summaries = summarizeConfigurations(judged);
  const look = currentLook(topic, judged);
  const test = { level: look.level, scores: seedScores(judged) };
  const own = summaries.filter((summary) => plan.configurations.some((configuration) => configuration.id === summary.configuration.id));
  const verdicts = plan.configurations.map((configuration) => {
    const summary = own.find((item) => item.configuration.id === configuration.id)!;
    return {
      configurationId: configuration.id,
      prediction: configuration.prediction.text,
      ...judge(configuration.prediction, summary, summaries, metric.goal, experiments, metric.range, test),
    };
  });
  // The campaign's best so far over every stage, the same number the report gives (a3r status shows it).
  const best = bestConfiguration(summaries, metric.goal);
  const ranking = campaignRanking(topic, judged);
  return {
    stage: plan.stage,
    metric: metric.name,
    score: metric.score,
    axis: onAxis.axis,
    experiments,
    configurations: own.map((summary) => {
      const sample = withinRange(summary.sample, metric.range);
      return {
        id: summary.configuration.id,
        n: sample.n,
        mean: sample.n > 0 ? sample.mean : undefined,
        low: sample.low,
        high: sample.high,
        failed: summary.failed,
        scores: summary.scores,
      };
    }),
    verdicts,
    ...(ranking
      ? {
          comparisons: {
            incumbent: ranking.incumbent.configuration.id,
            status: ranking.status,
            rows: ranking.comparisons,
            look: { look: look.look, level: look.level },
          },
        }
      : {}),
    best: best ? { id: best.configuration.id, mean: best.sample.mean, n: best.sample.n } : undefined,
    outcomes,
  };
}

function outcomeState(state: string): ExperimentOutcome["state"] {
  return state === "succeeded" || state === "failed" || state === "timed_out" || state === "cancelled" || state === "stopped_early" ? state : "missing";
}

/**
 * A prediction is directional and stated before the stage runs, so it is judged one-sided.
 * Supported: better than the reference beyond seed noise (the one-sided 95% bound of the
 * mean lies past a level; against a configuration, the planner's own test at this look,
 * paired by seed where it pairs, one-sided at the look's level and uncorrected: the same
 * test and level as the comparison shown beside it, one-sided because the prediction was
 * directional). Refuted: the mean is not better than the reference at all.
 * Inconclusive: better in the mean but within the noise, or not enough runs to say.
 */
function judge(
  prediction: Prediction,
  summary: ConfigurationSummary,
  all: ConfigurationSummary[],
  goal: "maximize" | "minimize",
  experiments: ExperimentAnalysis[],
  range: [number, number] | undefined,
  /** The planner's test at this look: "beats" is judged as the planner compares (paired by seed where it would), one-sided at the look's level. */
  test: { level: number; scores: SeedScores },
): Omit<PredictionVerdict, "configurationId" | "prediction"> {
  const sample = withinRange(summary.sample, range);
  const measured = `mean ${formatNumber(sample.mean)} over ${sample.n} seed(s), 95% interval ${sample.low === undefined ? "n/a" : `[${formatNumber(sample.low)}, ${formatNumber(sample.high)}]`}`;
  if (prediction.kind === "records") {
    // This stage's runs: a replicated configuration's earlier seeds were judged in their own stage.
    const runs = experiments.filter((experiment) => experiment.configurationId === summary.configuration.id);
    const recorded = runs.filter((run) => run.state === "succeeded" && run.score !== undefined).length;
    if (recorded > 0)
      return { verdict: "supported", explanation: `${recorded} of ${runs.length} run(s) of this stage recorded the metric (${measured}, every stage so far)` };
    const finished = runs.every((run) => ["succeeded", "failed", "timed_out", "cancelled", "stopped_early"].includes(run.state));
    return finished
      ? { verdict: "refuted", explanation: `none of ${runs.length} finished run(s) recorded the metric` }
      : { verdict: "inconclusive", explanation: "no run has recorded the metric yet" };
  }
  if (sample.n === 0)
    return {
      verdict: "inconclusive",
      explanation: `no run of ${summary.configuration.id} recorded a score (${summary.failed} run(s) failed, unfinished or without the metric)`,
    };
  if (prediction.kind === "above-level") {
    const level = prediction.level ?? Number.NaN;
    if (!isBetter(sample.mean, level, goal)) return { verdict: "refuted", explanation: `${measured}: the mean is not past ${formatNumber(level)}` };
    const bound = oneSidedBound(summary.sample, goal);
    if (bound !== undefined && isBetter(bound, level, goal))
      return { verdict: "supported", explanation: `${measured}: its one-sided 95% bound ${formatNumber(bound)} is past ${formatNumber(level)}` };
    if (bound === undefined)
      return { verdict: "inconclusive", explanation: `${measured}: the mean is past ${formatNumber(level)}, but one seed gives no noise to judge by` };
    return {
      verdict: "inconclusive",
      explanation: `${measured}: the mean is past ${formatNumber(level)} but its one-sided 95% bound ${formatNumber(bound)} reaches it`,
    };
  }
  const reference = all.find((item) => item.configuration.id === prediction.configurationId);
  if (!reference || reference.sample.n === 0)
    return { verdict: "inconclusive", explanation: `the reference ${prediction.configurationId ?? "(none)"} has no score to compare with` };
  const against = `${reference.configuration.id}'s mean ${formatNumber(reference.sample.mean)}${reference.sample.low === undefined ? "" : ` [${formatNumber(reference.sample.low)}, ${formatNumber(reference.sample.high)}]`}`;
  if (!isBetter(sample.mean, reference.sample.mean, goal)) return { verdict: "refuted", explanation: `${measured} is not better than ${against}` };
  const row = comparePair(summary, reference, { goal, ...(range ? { range } : {}) }, test.level, test.scores)?.row;
  if (!row || row.p === undefined)
    return { verdict: "inconclusive", explanation: `${measured} is better in the mean than ${against}, but one seed on a side gives no noise to judge by` };
  // One-sided: half the two-sided p, on the side the mean already favours.
  const oneSided = row.p / 2;
  const how = `${row.matched?.paired ? `paired by seed on ${row.matched.seeds} seeds` : "Welch's t"}, one-sided p ${formatNumber(oneSided)} at this look's level ${formatNumber(test.level)}`;
  if (oneSided < test.level) return { verdict: "supported", explanation: `${measured} is better than ${against}, beyond seed noise (${how})` };
  return { verdict: "inconclusive", explanation: `${measured} is better in the mean than ${against}, but within seed noise (${how})` };
}

/** Reads every planned experiment's result directory (a missing one reads as "missing"). */
export async function readStageRuns(paths: CampaignPaths, plan: StagePlan): Promise<RunRead[]> {
  return Promise.all(
    plan.experiments.map(async (experiment): Promise<RunRead> => {
      const dir = paths.result(experiment.blueprintId);
      if (!(await pathExists(dir))) return { blueprintId: experiment.blueprintId, state: "missing", reason: "no result directory", records: [] };
      const snapshot = await readResultDir(dir);
      const state = snapshot.finishFlag?.state ?? snapshot.status?.state ?? "missing";
      const reason =
        snapshot.status?.reason ?? (snapshot.status === undefined && snapshot.finishFlag === undefined ? "the result directory has no status.json" : undefined);
      const unfinished = snapshot.finishFlag?.state === undefined && state !== "missing" ? `not finished (state ${state})` : undefined;
      return { blueprintId: experiment.blueprintId, state, reason: reason ?? unfinished, records: snapshot.metrics.records };
    }),
  );
}

export function analysisPath(paths: CampaignPaths, stage: number): string {
  return join(paths.stage(stage).root, "analysis.md");
}

/** Reads the stage's results, analyzes them and writes `stages/<n>/analysis.md`. */
export async function analyzeStage(
  topic: Topic,
  plan: StagePlan,
  history: StageRecord[],
  paths: CampaignPaths,
): Promise<{ analysis: StageAnalysis; file: string }> {
  const reads = await readStageRuns(paths, plan);
  const analysis = analyzeStageResults(topic, plan, history, reads, (id) => paths.result(id));
  const file = analysisPath(paths, plan.stage);
  await writeRedactedFile(file, renderAnalysis(analysis, topic, paths.root));
  return { analysis, file };
}
