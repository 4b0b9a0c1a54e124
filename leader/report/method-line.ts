import { formatNumber } from "../domain/configurations.ts";
import type { ContrastVerdict } from "../domain/contrast-verdicts.ts";
import { scoreLabel } from "../domain/score-label.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * The report's one statement of how its figures are computed, so the intervals beside the
 * verdicts are read the way they were made: a configuration's mean has a plain 95% t
 * interval; every difference between two configurations has a Holm-adjusted interval
 * (at the level its Holm step tests at), which excludes 0 exactly when its verdict is
 * "beyond seed noise". Pure.
 */
export function methodLine(topic: Topic, incumbentComparisons: number, contrasts: readonly ContrastVerdict[]): string {
  const metric = topic.metric;
  if (!metric) return "Method: the topic names no metric, so nothing is scored.";
  const contrastTests = contrasts.reduce((sum, verdict) => sum + verdict.members.filter((member) => member.p !== undefined).length, 0);
  const families = [
    `the best against each other configuration (${incumbentComparisons} comparison(s))`,
    ...(contrasts.length > 0 ? [`the question's contrasts against the baseline (${contrastTests} comparison(s))`] : []),
  ];
  return [
    `Method: each run is scored by ${scoreLabel(metric)}, compared at equal ${topic.budgetAxis === "steps" ? "optimizer steps" : topic.budgetAxis} (budget_axis: ${topic.budgetAxis});`,
    `a configuration's mean has its 95% t interval over seeds;`,
    `two configurations are compared by Welch's t, with Holm's correction over each family (${families.join("; ")}) at alpha 0.05,`,
    `and each difference's interval is Holm-adjusted (at confidence 1 − 0.05·p/p_Holm, the level its Holm step tests at), so it excludes 0 exactly when the comparison is beyond seed noise;`,
    metric.equivalence === undefined
      ? "no equivalence margin is declared (metric.equivalence), so no tie can be shown."
      : `"the same" means two one-sided tests (TOST, Holm-corrected) within the margin ${formatNumber(metric.equivalence)}.`,
    metric.range ? `Intervals are clipped to the metric's range [${metric.range.join(", ")}].` : "",
    "The heuristic planner's stops compare two configurations that ran the same seeds paired (the paired t-test and TOST on their seed-matched differences, from four shared seeds), at its sequential design's level; the comparisons shown here are unpaired.",
  ]
    .filter((part) => part !== "")
    .join(" ");
}
