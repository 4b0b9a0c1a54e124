import { formatNumber } from "../domain/configurations.ts";
import { scoreLabel } from "../domain/score-label.ts";
import { alpha } from "../domain/comparisons.ts";
import type { LookLevel } from "../domain/sequential-design.ts";
import type { Topic } from "../domain/topic.ts";
import { minimumPairedSeeds, type IncumbentComparison } from "../domain/incumbent.ts";
import type { ContrastVerdict } from "../domain/contrast-verdicts.ts";

/**
 * The report's one statement of how its figures are computed, so the intervals beside the
 * verdicts are read the way they were made: a configuration's mean has a plain 95% t
 * interval; every difference between two configurations is tested as the planner tested it
 * at the campaign's last look (report-statistics.ts): paired by seed or by Welch's t, at the
 * look's level of the sequential design, Holm over its family, with an interval adjusted to
 * the level its Holm step tests at, which excludes 0 exactly when its verdict is "beyond
 * seed noise". Pure.
 */
export function methodLine(topic: Topic, look: LookLevel, incumbentComparisons: readonly IncumbentComparison[], contrasts: readonly ContrastVerdict[]): string {
  const metric = topic.metric;
  if (!metric) return "Method: the topic names no metric, so nothing is scored.";
  const contrastMembers = contrasts.flatMap((verdict) => verdict.members).filter((member) => member.p !== undefined);
  const tested = [...incumbentComparisons.filter((comparison) => comparison.p !== undefined), ...contrastMembers];
  const paired = tested.filter((item) => item.matched?.paired).length;
  const guarded = tested.filter((item) => item.matched && !item.matched.paired).length;
  const unmatched = tested.length - paired - guarded;
  const families = [
    `the best against each other configuration (${incumbentComparisons.length} comparison(s))`,
    ...(contrasts.length > 0 ? [`the question's contrasts against the baseline (${contrastMembers.length} comparison(s))`] : []),
  ];
  const level = formatNumber(look.level);
  return [
    `Method: each run is scored by ${scoreLabel(metric)}, compared at equal ${topic.budgetAxis === "steps" ? "optimizer steps" : topic.budgetAxis} (budget_axis: ${topic.budgetAxis});`,
    `a configuration's mean has its 95% t interval over seeds;`,
    `two configurations are compared as the planner compared them at the campaign's last look: paired by seed (the paired t on their seed-matched differences) where they ran ${minimumPairedSeeds} or more of the same seeds, else by Welch's t (its error raised to the paired one when they share fewer, from two)`,
    `(here ${paired} of the ${tested.length} comparison(s) paired${guarded > 0 ? `, ${guarded} Welch guarded by matched seeds` : ""}${unmatched > 0 ? `, ${unmatched} Welch` : ""});`,
    `each is held to the level of look ${look.look} (at ${Math.round(look.information * 100)}% of the experiment budget), ${level}, of the campaign's group-sequential design (Pocock-type spending of ${alpha} over its looks, so the chance of any false claim over the campaign is at most about ${alpha}),`,
    `with Holm's correction over each family (${families.join("; ")}),`,
    `and each difference's interval is Holm-adjusted (at confidence 1 − ${level}·p/p_Holm, the level its Holm step tests at), so it excludes 0 exactly when Holm p < ${level}, that is when the comparison is beyond seed noise;`,
    metric.equivalence === undefined
      ? "no equivalence margin is declared (metric.equivalence), so no tie can be shown."
      : `"the same" means two one-sided tests (TOST, Holm-corrected, at the same level) within the margin ${formatNumber(metric.equivalence)}.`,
    metric.range ? `Intervals are clipped to the metric's range [${metric.range.join(", ")}].` : "",
    "A stage plan's predictions are checked one by one without correction (one configuration beating another by the same test, one-sided at the look's level; a mean past a level by its one-sided 95% bound): a check of the plan, not a claim of the answer.",
  ]
    .filter((part) => part !== "")
    .join(" ");
}
