import type { LedgerSummary, MetricsRecord, RoleTotals } from "../../campaign/index.ts";
import type { ChartSeries } from "../../core/line-chart.ts";
import { analyzeStageResults, type RunRead, type StageAnalysis } from "../analysis/analyze-stage.ts";
import { checkConclusion, type CheckedClaim } from "./conclusion-check.ts";
import { bestConfiguration, summarizeConfigurations } from "../domain/configurations.ts";
import { scoreLabel } from "../domain/score-label.ts";
import type { Conclusion, FramedQuestion, StageRecord } from "../domain/planner.ts";
import { reportCaveats } from "./caveats.ts";
import type { ExperimentRow } from "./experiment-row.ts";
import type { IncumbentComparison, IncumbentStatus } from "../domain/incumbent.ts";
import { withinRange } from "../domain/statistics.ts";
import type { Topic } from "../domain/topic.ts";
import { answerParagraphs, settingsText, type Paragraph } from "./answer.ts";
import { reportStatistics } from "./report-statistics.ts";
import type { ContrastVerdict } from "../domain/contrast-verdicts.ts";
import { measurementLine } from "./measurement-line.ts";
import { methodLine } from "./method-line.ts";
import type { EarlierCampaign } from "../history/earlier-campaigns.ts";

/**
 * Everything the campaign report says, as plain data computed in code: the answer with
 * its numbers, every configuration and experiment, the curves, the caveats, the costs and
 * the checked model conclusion. report-markdown.ts and report-html.ts only lay it out, so
 * both files say the same thing and no number in them comes from a model. Pure.
 */

/** Inline text: plain runs and strong runs (the answer's configuration id). */
export type { Inline, Paragraph } from "./answer.ts";
export { intervalText, settingsText } from "./answer.ts";

export interface ReportRunFiles {
  /** What the result directory holds now (readStageRuns). */
  read: RunRead;
  /** Link from the campaign folder to a file of the run that exists, e.g. results/<id>/result.md. */
  link: string | undefined;
}

export interface ReportInputs {
  campaignId: string;
  topic: Topic;
  history: StageRecord[];
  stop: { reason: string; explanation: string } | null;
  framing?: FramedQuestion;
  conclusion?: Conclusion;
  /** Keyed by blueprint id; an experiment absent here reads as having no result directory. */
  runs: Record<string, ReportRunFiles>;
  ledger: LedgerSummary;
  /** Unreadable ledger lines (left out of the totals). */
  ledgerProblems: number;
  /** Stage numbers that have a plan.md in the campaign folder. */
  plannedStages: number[];
  /** Each re-opening after a budget stop (leader/record/reopen.ts): when, and the stop it undid. */
  reopenings?: { time: string; after?: string }[];
  /** Campaigns that ran the same base before this one (leader/history/earlier-campaigns.ts). */
  earlierCampaigns?: EarlierCampaign[];
}

export interface ConfigurationRow {
  id: string;
  settings: string;
  stage: number;
  n: number;
  failed: number;
  mean: number | undefined;
  low: number | undefined;
  high: number | undefined;
  scores: number[];
  isBest: boolean;
}

export type { ExperimentRow } from "./experiment-row.ts";

export interface VerdictRow {
  stage: number;
  configurationId: string;
  prediction: string;
  verdict: "supported" | "refuted" | "inconclusive";
  explanation: string;
}

export interface StageCurves {
  stage: number;
  series: ChartSeries[];
  /** How many runs each series averages (its configuration's succeeded runs), parallel to `series`. */
  runs: number[];
}

/** One role's line of the ledger, as the report shows it: calls, tokens, dollars and the time the calls took. */
export type RoleCostRow = { role: string } & RoleTotals;

export interface ReportCosts {
  gpuHours: number;
  gpuEntries: number;
  byHost: { host: string; gpuHours: number }[];
  /** Roles with at least one call, then the total. */
  llmByRole: RoleCostRow[];
  llmTotal: RoleCostRow;
}

export interface CampaignReportModel {
  campaignId: string;
  title: string;
  question: string;
  framing: FramedQuestion | undefined;
  metric: { name: string; goal: "maximize" | "minimize"; label: string; reference: number | undefined; equivalence?: number } | undefined;
  stop: { reason: string; explanation: string } | null;
  /** How every figure is computed, stated once (method-line.ts). */
  method: string;
  /**
   * The sequential design's last look, whose level every comparison below is tested at
   * (report-statistics.ts: the planner's ranking and test, so each difference has one verdict).
   */
  look: { look: number; information: number; level: number };
  /** The question's contrasts against the baseline, judged: the first paragraph of the answer. */
  contrasts: ContrastVerdict[];
  answer: Paragraph[];
  bestId: string | undefined;
  configurations: ConfigurationRow[];
  /** The best against every other configuration (paired by seed or Welch, Holm, TOST, at the look's level): the answer's evidence. */
  comparisons: { incumbent: string; status: IncumbentStatus; rows: IncumbentComparison[] } | undefined;
  verdicts: VerdictRow[];
  experiments: ExperimentRow[];
  curves: StageCurves[];
  caveats: string[];
  costs: ReportCosts;
  conclusion: { answer: string; claims: CheckedClaim[]; caveats: string[]; flagged: number } | undefined;
  stages: number[];
}

export function buildReportModel(inputs: ReportInputs): CampaignReportModel {
  const { topic, history } = inputs;
  const metric = topic.metric;
  const summaries = summarizeConfigurations(history);
  const best = metric ? bestConfiguration(summaries, metric.goal) : undefined;
  // The planner's ranking and test at the campaign's last look, for every figure below.
  const { look, ranking, contrasts } = reportStatistics(topic, history, summaries);
  // The stages judged again from the files, each with the stages before it (as in the graph).
  const analyses = metric
    ? history.map((record, index) => analyzeStageResults(topic, record.plan, history.slice(0, index), readsOf(record, inputs.runs), () => ""))
    : undefined;
  const experiments = experimentRows(inputs, analyses);
  const verdicts = analyses ? analyses.flatMap((analysis) => analysis.verdicts.map((verdict) => ({ stage: analysis.stage, ...verdict }))) : [];
  const knownIds = history.flatMap((record) => record.plan.experiments.map((experiment) => experiment.blueprintId));
  const checked = inputs.conclusion ? checkConclusion(inputs.conclusion, knownIds) : undefined;
  const model: CampaignReportModel = {
    campaignId: inputs.campaignId,
    title: topic.title,
    question: topic.question,
    framing: inputs.framing,
    metric: metric
      ? {
          name: metric.name,
          goal: metric.goal,
          label: scoreLabel(metric),
          reference: metric.reference,
          ...(metric.equivalence === undefined ? {} : { equivalence: metric.equivalence }),
        }
      : undefined,
    stop: inputs.stop,
    method: [methodLine(topic, look, ranking?.comparisons ?? [], contrasts), measurementLine(topic), topic.reproducibility ?? ""].filter(Boolean).join(" "),
    look: { look: look.look, information: look.information, level: look.level },
    contrasts,
    answer: [
      ...answerParagraphs({
        topic,
        summaries,
        best,
        ranking,
        stop: inputs.stop,
        history,
        contrasts,
        compute: {
          runs: experiments.length,
          unscored: experiments.filter((row) => row.state !== "succeeded" || row.score === undefined).length,
          gpuHours: inputs.ledger.gpu.gpuHours,
          gpuEntries: inputs.ledger.gpu.entries,
        },
      }),
      ...reopeningParagraphs(inputs.reopenings ?? []),
      ...earlierCampaignParagraphs(inputs.earlierCampaigns ?? []),
    ],
    bestId: best?.configuration.id,
    configurations: summaries.map((summary) => {
      const sample = withinRange(summary.sample, metric?.range);
      return {
        id: summary.configuration.id,
        settings: settingsText(summary.configuration.settings),
        stage: summary.stage,
        n: sample.n,
        failed: summary.failed,
        mean: sample.n > 0 ? sample.mean : undefined,
        low: sample.low,
        high: sample.high,
        scores: summary.scores,
        isBest: summary === best,
      };
    }),
    comparisons: ranking ? { incumbent: ranking.incumbent.configuration.id, status: ranking.status, rows: ranking.comparisons } : undefined,
    verdicts,
    experiments,
    // One colour per configuration across every chart: its place among all the campaign's configurations.
    curves: metric
      ? history.map((record) =>
          stageCurves(
            record,
            inputs.runs,
            metric.name,
            summaries.map((summary) => summary.configuration.id),
          ),
        )
      : [],
    caveats: [],
    costs: costsOf(inputs.ledger),
    conclusion:
      checked && inputs.conclusion
        ? { answer: inputs.conclusion.answer, claims: checked.claims, caveats: inputs.conclusion.caveats, flagged: checked.flagged }
        : undefined,
    stages: history.map((record) => record.plan.stage),
  };
  model.caveats = reportCaveats({
    topic,
    summaries,
    best,
    ranking,
    experiments,
    stop: inputs.stop,
    history,
    plannedStages: inputs.plannedStages,
    ledger: inputs.ledger,
    ledgerProblems: inputs.ledgerProblems,
    flaggedClaims: checked?.flagged ?? 0,
    rescored: analyses ? rescoredRuns(history, analyses) : [],
  });
  return model;
}

/** One line per re-opening, so a reader sees that an earlier stop was lifted and why. */
function earlierCampaignParagraphs(earlier: readonly EarlierCampaign[]): Paragraph[] {
  if (earlier.length === 0) return [];
  const items = earlier.map((campaign) => {
    const stop = campaign.stop
      ? `stopped ${campaign.stop.reason}: ${campaign.stop.explanation.split(/(?<=[.;])\s/)[0]!.replace(/[.;\s]+$/, "")}`
      : "not finished";
    const reused = campaign.reusedRuns > 0 ? `; ${campaign.reusedRuns} of this campaign's runs were taken from it, not trained again` : "";
    return `${campaign.id}${campaign.title ? ` ("${campaign.title}")` : ""}, ${stop}${reused}`;
  });
  return [[`Known before this campaign (earlier campaigns on the same code, config and command; a3r history lists them): ${items.join("; ")}.`]];
}

function reopeningParagraphs(reopenings: NonNullable<ReportInputs["reopenings"]>): Paragraph[] {
  return reopenings.map((reopening, index) => [
    `Re-opened (round ${index + 1}, ${reopening.time.slice(0, 16).replace("T", " ")} UTC) after it had stopped on a budget${reopening.after === undefined ? "" : `: ${reopening.after.replace(/[.\s]+$/, "")}`}.`,
  ]);
}

function experimentRows(inputs: ReportInputs, analyses: StageAnalysis[] | undefined): ExperimentRow[] {
  const byBlueprint = inputs.ledger.gpu.byBlueprint;
  return inputs.history.flatMap((record, index) => {
    const analysis = analyses?.[index];
    return record.outcomes.map((outcome): ExperimentRow => {
      const curve = analysis?.experiments.find((experiment) => experiment.blueprintId === outcome.blueprintId)?.curve;
      return {
        stage: record.plan.stage,
        blueprintId: outcome.blueprintId,
        configurationId: outcome.configurationId,
        seed: outcome.seed,
        state: outcome.state,
        reason: outcome.reason,
        final: curve?.final,
        best: curve?.best,
        bestStep: curve?.bestStep,
        area: curve?.normalizedArea,
        score: outcome.state === "succeeded" ? outcome.score : undefined,
        gpuHours: Object.hasOwn(byBlueprint, outcome.blueprintId) ? byBlueprint[outcome.blueprintId] : undefined,
        link: inputs.runs[outcome.blueprintId]?.link,
      };
    });
  });
}

function readsOf(record: StageRecord, runs: Record<string, ReportRunFiles>): RunRead[] {
  return record.plan.experiments.flatMap((experiment) => (Object.hasOwn(runs, experiment.blueprintId) ? [runs[experiment.blueprintId]!.read] : []));
}

/** Runs whose score in the files differs from the score the stage analysis recorded. */
function rescoredRuns(history: StageRecord[], analyses: StageAnalysis[]): { blueprintId: string; recorded: number | undefined; now: number | undefined }[] {
  return history.flatMap((record, index) => {
    const analysis = analyses[index]!;
    return record.outcomes.flatMap((outcome) => {
      const now = analysis.experiments.find((experiment) => experiment.blueprintId === outcome.blueprintId)?.score;
      const same =
        now === outcome.score || (now !== undefined && outcome.score !== undefined && Math.abs(now - outcome.score) <= 1e-9 * Math.max(1, Math.abs(now)));
      return same ? [] : [{ blueprintId: outcome.blueprintId, recorded: outcome.score, now }];
    });
  });
}

/**
 * One series per configuration of the stage: its run's curve, or the mean over its runs at
 * each step. Only runs that succeeded are drawn, the same runs its score counts; a failed
 * run's partial curve would bend the mean where it stops (the caveats list those runs).
 */
export function stageCurves(record: StageRecord, runs: Record<string, ReportRunFiles>, metricName: string, colorOrder: readonly string[] = []): StageCurves {
  const series: ChartSeries[] = [];
  const counts: number[] = [];
  const succeeded = new Set(record.outcomes.filter((outcome) => outcome.state === "succeeded").map((outcome) => outcome.blueprintId));
  for (const configuration of record.plan.configurations) {
    const curves = record.plan.experiments
      .filter((experiment) => experiment.configurationId === configuration.id && succeeded.has(experiment.blueprintId))
      .map((experiment) => curveOf(runs[experiment.blueprintId]?.read.records ?? [], metricName))
      .filter((curve) => curve.size > 0);
    if (curves.length === 0) continue;
    // The name stays the bare id: the chart legend cuts long names, and the caption gives the run counts.
    const colorIndex = colorOrder.indexOf(configuration.id);
    series.push({ name: configuration.id, points: meanCurve(curves), ...(colorIndex === -1 ? {} : { colorIndex }) });
    counts.push(curves.length);
  }
  return { stage: record.plan.stage, series, runs: counts };
}

/** step → value of one run; a step recorded twice (a resumed attempt) keeps the later value. */
function curveOf(records: MetricsRecord[], metricName: string): Map<number, number> {
  const curve = new Map<number, number>();
  for (const record of records) {
    const value = record[metricName];
    if (typeof value === "number" && Number.isFinite(value)) curve.set(record.step, value);
  }
  return curve;
}

/** At each step, the mean over the runs that recorded it. */
export function meanCurve(curves: Map<number, number>[]): { x: number; y: number }[] {
  const steps = [...new Set(curves.flatMap((curve) => [...curve.keys()]))].sort((left, right) => left - right);
  return steps.map((step) => {
    const values = curves.flatMap((curve) => (curve.has(step) ? [curve.get(step)!] : []));
    return { x: step, y: values.reduce((sum, value) => sum + value, 0) / values.length };
  });
}

function costsOf(ledger: LedgerSummary): ReportCosts {
  const row = (role: string, totals: RoleTotals): RoleCostRow => ({
    role,
    calls: totals.calls,
    failedCalls: totals.failedCalls,
    inputTokens: totals.inputTokens,
    outputTokens: totals.outputTokens,
    cachedTokens: totals.cachedTokens,
    costUsd: totals.costUsd,
    durationMs: totals.durationMs,
  });
  const llmByRole = Object.entries(ledger.llm.byRole)
    .filter(([, totals]) => totals.calls > 0)
    .map(([role, totals]) => row(role, totals));
  return {
    gpuHours: ledger.gpu.gpuHours,
    gpuEntries: ledger.gpu.entries,
    byHost: Object.entries(ledger.gpu.byHost).map(([host, gpuHours]) => ({ host, gpuHours })),
    llmByRole,
    llmTotal: row("total", ledger.llm),
  };
}
