import { formatNumber } from "../domain/configurations.ts";
import type { IncumbentComparison } from "../domain/incumbent.ts";
import { intervalText } from "./answer.ts";
import { levelText } from "./question-answer.ts";
import type { CampaignReportModel } from "./model.ts";
import { testText } from "../analysis/test-text.ts";

/**
 * The table behind the answer: the best against every other configuration, as plain cells
 * that report.md and report.html both lay out (so both show the same figures): the
 * planner's ranking at the campaign's last look, each row with the test it was judged by.
 */
export const comparisonHeader = [
  "other",
  "best ahead by",
  "Holm-adjusted interval (level)",
  "Hedges' g [same level]",
  "test (df)",
  "p",
  "Holm p",
  "TOST Holm p",
  "verdict",
];

const verdictWords: Record<IncumbentComparison["verdict"], string> = {
  worse: "worse beyond seed noise",
  equivalent: "the same within the margin",
  open: "open",
  undecidable: "fewer than two seeds",
};

export function comparisonCaption(model: CampaignReportModel, equivalence: number | undefined): string {
  const comparisons = model.comparisons!;
  const level = formatNumber(model.look.level);
  return `${comparisons.incumbent} against each other configuration, as the planner judged them at the campaign's last look (look ${model.look.look}, level ${level}; the test per row as the method states), Holm-corrected over the ${comparisons.rows.length} comparison(s); each interval is Holm-adjusted (at the level its Holm step tests at, so it excludes 0 exactly when Holm p < ${level}) and clipped to the metric's range; ${equivalence === undefined ? "no equivalence margin declared (metric.equivalence), so no tie can be shown" : `equivalence margin ${formatNumber(equivalence)} (two one-sided tests)`}. Status: ${comparisons.status}.`;
}

export function comparisonCells(model: CampaignReportModel): string[][] {
  return (model.comparisons?.rows ?? []).map((row) => [
    row.otherId,
    formatNumber(row.advantage),
    row.low === undefined ? "n/a" : `${intervalText(row.low, row.high)} (${levelText(row.level)})`,
    row.effect ? `${formatNumber(row.effect.g)} ${intervalText(row.effect.low, row.effect.high)}` : "n/a",
    testText(row),
    formatNumber(row.p),
    formatNumber(row.pHolm),
    formatNumber(row.equivalencePHolm),
    verdictWords[row.verdict],
  ]);
}
