import { relative } from "node:path";
import type { StageAnalysis } from "./stage-analysis.ts";
import { minimumPairedSeeds, type IncumbentComparison } from "../domain/incumbent.ts";
import { formatNumber } from "../domain/configurations.ts";
import { scoreLabel } from "../domain/score-label.ts";
import type { Topic } from "../domain/topic.ts";
import { alpha } from "../domain/comparisons.ts";
import { testText } from "./test-text.ts";

/**
 * `stages/<n>/analysis.md`: every number computed by leader/analysis/analyze-stage.ts, laid out
 * for a person; links to result directories are relative to the campaign folder so the
 * folder can be moved or copied whole.
 */
export function renderAnalysis(analysis: StageAnalysis, topic: Topic, campaignRoot: string): string {
  const metric = topic.metric!;
  const stageRoot = `${campaignRoot}/stages/${analysis.stage}`;
  const failed = analysis.experiments.filter((experiment) => experiment.state !== "succeeded" || experiment.score === undefined);
  const stoppedEarly = failed.filter((experiment) => experiment.state === "stopped_early");
  const lines = [
    `# Stage ${analysis.stage} analysis: ${topic.title}`,
    "",
    `Score: ${scoreLabel(metric)} (goal: ${metric.goal}). ${analysis.experiments.length - failed.length} of ${analysis.experiments.length} experiment(s) produced a score.`,
    ...axisLines(analysis),
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
    ...comparisonLines(analysis, metric.equivalence),
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
  if (stoppedEarly.length > 0) lines.push(...stoppedEarlyLines(stoppedEarly));
  const unscored = failed.filter((experiment) => experiment.state !== "stopped_early");
  if (unscored.length > 0) {
    lines.push(
      "## Failed or missing",
      "",
      ...unscored.map((experiment) => `- ${experiment.blueprintId}: ${experiment.state}${experiment.reason ? `: ${experiment.reason}` : ""}`),
      "",
    );
  }
  return lines.join("\n");
}

const verdictWords: Record<IncumbentComparison["verdict"], string> = {
  worse: "worse beyond seed noise",
  equivalent: "the same within the margin",
  open: "open: more seeds could settle it",
  undecidable: "undecidable: fewer than two scored seeds",
};

/** "at look 2's level 0.0213 (the sequential design's)", or 0.05 for an analysis written before the design was recorded. */
function lookText(look: { look: number; level: number } | undefined): string {
  return look === undefined
    ? `at ${alpha}`
    : `at look ${look.look}'s level ${formatNumber(look.level)} (the campaign's group-sequential design, leader/METHOD.md)`;
}

/** The incumbent against every other configuration so far: the rows the planner decides from. */
function comparisonLines(analysis: StageAnalysis, equivalence: number | undefined): string[] {
  const comparisons = analysis.comparisons;
  if (!comparisons || comparisons.rows.length === 0) return [];
  return [
    `## Against the incumbent (${comparisons.incumbent}, every stage so far)`,
    "",
    `As the planner judges them at this look: paired by seed (the paired t on seed-matched differences) where two configurations ran ${minimumPairedSeeds} or more of the same seeds, else Welch's t (guarded by the paired error with fewer shared seeds, from two); ${lookText(comparisons.look)}, Holm-corrected over the ${comparisons.rows.length} comparison(s); intervals are Holm-adjusted (each at the level its Holm step tests at, so it excludes 0 exactly when Holm p < ${formatNumber(comparisons.look?.level ?? alpha)}) and clipped to the metric's range${equivalence === undefined ? "; no equivalence margin is declared (`metric.equivalence`), so a tie cannot be shown" : `; equivalence margin ${formatNumber(equivalence)} (two one-sided tests)`}. Status: **${comparisons.status}**.`,
    "",
    "| other | incumbent ahead by | Holm-adjusted interval (level) | Hedges' g [same level] | test (df) | p | Holm p | TOST Holm p | verdict |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...comparisons.rows.map(
      (row) =>
        `| ${row.otherId} | ${formatNumber(row.advantage)} | ${row.low === undefined ? "n/a" : `[${formatNumber(row.low)}, ${formatNumber(row.high)}] (${formatNumber(row.level * 100)}%)`} | ${row.effect ? `${formatNumber(row.effect.g)} [${formatNumber(row.effect.low)}, ${formatNumber(row.effect.high)}]` : "n/a"} | ${testText(row)} | ${formatNumber(row.p)} | ${formatNumber(row.pHolm)} | ${formatNumber(row.equivalencePHolm)} | ${verdictWords[row.verdict]} |`,
    ),
    "",
  ];
}

/** Runs the topic's early stopping cut at a rung: left out of every comparison above, listed with their evidence. */
function stoppedEarlyLines(experiments: StageAnalysis["experiments"]): string[] {
  return [
    "## Stopped early (successive halving)",
    "",
    `${experiments.length} run(s) were stopped at a rung because their partial score was clearly below the best's; their compute is booked, and only runs that completed are compared above.`,
    "",
    ...experiments.map(
      (experiment) => `- ${experiment.blueprintId} (${experiment.configurationId}, seed ${experiment.seed}): ${experiment.reason ?? "stopped early"}`,
    ),
    "",
  ];
}

/** What the scores were compared at equal amounts of, and what makes that unfair. */
function axisLines(analysis: StageAnalysis): string[] {
  const axis = analysis.axis;
  if (!axis) return [];
  const lines = [
    axis.name === "steps"
      ? "Compared per optimizer step (budget_axis: steps)."
      : `Compared at equal ${axis.unit}${axis.budget === undefined ? "" : `: every run up to ${formatNumber(axis.budget)}, the budget all of them reached`} (budget_axis: ${axis.name}).`,
  ];
  if (axis.onSteps.length > 0) lines.push(`Kept on steps (their records do not say what a step consumed): ${axis.onSteps.join(", ")}.`);
  if (axis.confound) lines.push(`**Confound:** ${axis.confound}.`);
  return lines;
}
