import type { MetricsRecord } from "../../campaign/index.ts";
import { formatDuration } from "../../core/duration.ts";
import { renderLineChart, type ChartSeries } from "../../core/line-chart.ts";
import { aggregateSeries, judgePrediction, type MetricSeriesPoint, type Verdict } from "../rules/prediction.ts";
import type { AttemptSummary } from "../run/run-memory.ts";

/**
 * result.md and curves.svg from what the run recorded. Pure: records in, text out; the
 * caller redacts secrets and writes the files through the ResultDirWriter.
 */
export interface ResultReportInput {
  blueprintId: string;
  state: string;
  reason: string | null;
  hypothesis?: string;
  prediction?: string;
  metric?: { name: string; goal: "maximize" | "minimize" };
  records: MetricsRecord[];
  attempts: AttemptSummary[];
  elapsedMs: number;
  budgetMs: number;
  finalOverrides: Record<string, string | number | boolean>;
  /** The blueprint's campaign and stage (front matter), to say where the leader's verdict is. */
  campaign?: string;
  stage?: number | string;
  /** What confined the run's commands: "bwrap (...)" or "none (why)" (launch/sandbox-plan.ts). */
  sandbox?: string;
  /** Set when the run ended before its planned steps (`stopped at step 3 of 20`): the prediction is not judged. */
  partial?: string;
}

const bookkeeping = new Set(["step", "time", "attempt"]);

/** Every metric name recorded, the blueprint's metric first. */
export function metricNames(records: MetricsRecord[], primary?: string): string[] {
  const names = new Set<string>();
  for (const record of records) for (const key of Object.keys(record)) if (!bookkeeping.has(key)) names.add(key);
  const sorted = [...names].sort();
  return primary && names.has(primary) ? [primary, ...sorted.filter((name) => name !== primary)] : sorted;
}

export function seriesOf(records: MetricsRecord[], name: string): MetricSeriesPoint[] {
  const points: MetricSeriesPoint[] = [];
  for (const record of records) {
    const value = record[name];
    // A NaN or infinite value (a diverged loss) is recorded, but is no point of a curve.
    if (typeof value === "number" && Number.isFinite(value)) points.push({ step: record.step, value });
  }
  return points;
}

const show = (value: number | undefined): string =>
  value === undefined ? "—" : Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(5)));

export function judgeResult(input: ResultReportInput): Verdict {
  if (input.partial) {
    // A run that stopped before its planned steps has a partial curve: its "last" or "best" is not the run's.
    return { verdict: "inconclusive", explanation: `the run ${input.partial}, so the prediction is not judged on its partial curve` };
  }
  return judgePrediction(input.prediction, (name) => seriesOf(input.records, name), {
    ...(input.metric ? { goal: input.metric.goal } : {}),
    finished: input.state === "succeeded",
  });
}

export function renderResultMarkdown(input: ResultReportInput): string {
  const verdict = judgeResult(input);
  const lines: string[] = [`# Result: ${input.blueprintId}`, ""];
  lines.push(`- Outcome: **${input.state}**${input.reason ? ` — ${input.reason}` : ""}`);
  lines.push(`- Attempts: ${input.attempts.length}`);
  lines.push(`- Time: ${formatDuration(input.elapsedMs)} of a ${formatDuration(input.budgetMs)} budget`);
  const lastStep = input.records[input.records.length - 1]?.step;
  lines.push(`- Steps recorded: ${input.records.length}${lastStep === undefined ? "" : ` (last step ${lastStep})`}`);
  if (input.sandbox) lines.push(`- Sandbox: ${input.sandbox}`);
  lines.push("", "## Prediction", "");
  if (input.hypothesis) lines.push(`Hypothesis: ${input.hypothesis}`, "");
  lines.push(`Prediction: ${input.prediction ?? "(none)"}`, "");
  if (input.metric) {
    const last = aggregateSeries(seriesOf(input.records, input.metric.name), "last");
    lines.push(
      `Metric: ${input.metric.name} (${input.metric.goal}); ${last ? `last recorded ${show(last.value)} at step ${last.step}` : "no finite value recorded"}`,
      "",
    );
  }
  lines.push(`Verdict: **${verdict.verdict}** — ${verdict.explanation}.`, "", leaderVerdictLine(input));

  const names = metricNames(input.records, input.metric?.name);
  lines.push("", "## Metrics", "");
  if (names.length === 0) {
    lines.push("No metrics were recorded.");
  } else {
    if (input.metric) {
      const best = aggregateSeries(seriesOf(input.records, input.metric.name), "best", input.metric.goal);
      lines.push(`Best ${input.metric.name} (${input.metric.goal}): ${best ? `${show(best.value)} at step ${best.step}` : "none recorded"}`, "");
    }
    lines.push("| metric | final | min | max | steps |", "| --- | --- | --- | --- | --- |");
    for (const name of names.slice(0, 20)) {
      const series = seriesOf(input.records, name);
      const final = aggregateSeries(series, "last");
      const low = aggregateSeries(series, "best", "minimize");
      const high = aggregateSeries(series, "best", "maximize");
      lines.push(`| ${name} | ${show(final?.value)} | ${show(low?.value)} | ${show(high?.value)} | ${series.length} |`);
    }
    if (names.length > 20) lines.push("", `(${names.length - 20} more metrics in metrics.jsonl)`);
  }

  lines.push("", "## What changed across attempts", "");
  for (const attempt of input.attempts) {
    lines.push(`${attempt.attempt}. ${attempt.ending}${attempt.change ? ` → ${attempt.change}` : ""}`);
  }
  if (input.attempts.length === 0) lines.push("No attempt was launched.");
  const overrides = Object.entries(input.finalOverrides);
  lines.push("", `Final overrides: ${overrides.length === 0 ? "none" : overrides.map(([key, value]) => `${key}=${String(value)}`).join(", ")}`);
  lines.push("", "Details: attempts.md (what was seen and changed), events.jsonl, logs/attempt-N.log, curves.svg.", "");
  return lines.join("\n");
}

/**
 * Where the judgement that counts is made: the leader weighs each prediction against the
 * stage's other runs (seeds, baselines) in the stage's analysis, which this run alone cannot.
 */
function leaderVerdictLine(input: ResultReportInput): string {
  if (input.campaign === undefined) {
    return "The worker's verdict above uses this run alone; no campaign owns it, so no leader verdict will follow.";
  }
  const stage = input.stage === undefined ? "<stage>" : String(input.stage);
  return `The worker's verdict above uses this run alone; the leader's verdict on the prediction, against the stage's other runs, is in stages/${stage}/analysis.md of campaign ${input.campaign} (and its report.md).`;
}

/** The blueprint's metric (or the first few) against the step. */
export function renderCurves(records: MetricsRecord[], title: string, primary?: string): string {
  const names = metricNames(records, primary).slice(0, primary ? 1 : 4);
  const series: ChartSeries[] = names.map((name) => ({ name, points: seriesOf(records, name).map((point) => ({ x: point.step, y: point.value })) }));
  return renderLineChart(series, { title, xLabel: "step", yLabel: primary ?? "value" });
}
