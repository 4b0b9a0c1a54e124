import { relative } from "node:path";
import type { StageAnalysis } from "./stage-analysis.ts";
import { formatNumber } from "../domain/configurations.ts";
import { scoreLabel } from "../domain/score-label.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * `stages/<n>/analysis.md`: every number computed by leader/analysis/analyze-stage.ts, laid out
 * for a person; links to result directories are relative to the campaign folder so the
 * folder can be moved or copied whole.
 */
export function renderAnalysis(analysis: StageAnalysis, topic: Topic, campaignRoot: string): string {
  const metric = topic.metric!;
  const stageRoot = `${campaignRoot}/stages/${analysis.stage}`;
  const failed = analysis.experiments.filter((experiment) => experiment.state !== "succeeded" || experiment.score === undefined);
  const lines = [
    `# Stage ${analysis.stage} analysis: ${topic.title}`,
    "",
    `Score: ${scoreLabel(metric)} (goal: ${metric.goal}). ${analysis.experiments.length - failed.length} of ${analysis.experiments.length} experiment(s) produced a score.`,
    analysis.best
      ? `Best configuration of this stage: **${analysis.best.id}** (mean ${formatNumber(analysis.best.mean)}).`
      : "No configuration of this stage produced a score.",
    "",
    "## Configurations (across seeds)",
    "",
    "| configuration | seeds scored | failed | mean | 95% interval | scores |",
    "| --- | --- | --- | --- | --- | --- |",
    ...analysis.configurations.map(
      (item) =>
        `| ${item.id} | ${item.n} | ${item.failed} | ${formatNumber(item.mean)} | ${item.low === undefined ? "n/a" : `[${formatNumber(item.low)}, ${formatNumber(item.high)}]`} | ${item.scores.map(formatNumber).join(", ")} |`,
    ),
    "",
    "## Predictions",
    "",
    ...analysis.verdicts.map(
      (verdict) => `- **${verdict.configurationId}**: ${verdict.verdict.toUpperCase()}. Predicted: ${verdict.prediction}. Measured: ${verdict.explanation}.`,
    ),
    "",
    "## Experiments",
    "",
    `| experiment | configuration | seed | state | final | best (step) | area | score | result |`,
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...analysis.experiments.map((experiment) => {
      const link = relative(stageRoot, experiment.resultDir);
      const best = experiment.curve.best === undefined ? "n/a" : `${formatNumber(experiment.curve.best)} (${experiment.curve.bestStep})`;
      return `| ${experiment.blueprintId} | ${experiment.configurationId} | ${experiment.seed} | ${experiment.state} | ${formatNumber(experiment.curve.final)} | ${best} | ${formatNumber(experiment.curve.normalizedArea)} | ${formatNumber(experiment.score)} | [${experiment.blueprintId}](${link}/) |`;
    }),
    "",
  ];
  if (failed.length > 0) {
    lines.push(
      "## Failed or missing",
      "",
      ...failed.map((experiment) => `- ${experiment.blueprintId}: ${experiment.state}${experiment.reason ? `: ${experiment.reason}` : ""}`),
      "",
    );
  }
  return lines.join("\n");
}
