import type { MetricsRecord } from "../../campaign/index.ts";
import type { ExperimentOutcome } from "../domain/planner.ts";
import type { IncumbentComparison, IncumbentStatus } from "../domain/incumbent.ts";
import type { BudgetAxis } from "../domain/budget-axis.ts";
import type { CurveSummary } from "../domain/statistics.ts";

/**
 * The analysis of one stage, in code: per experiment the final, best and area of the
 * topic's metric and the score the planner compares; per configuration the mean and 95%
 * interval of that score across seeds (clipped to the metric's range); the incumbent
 * against every other configuration so far; each configuration's prediction judged with
 * the numbers. An experiment that failed, timed out, was cancelled or never produced a result
 * directory is listed as such with its reason, never dropped.
 */
export interface RunRead {
  blueprintId: string;
  /** Final state, "missing" without a result directory, or the live state of an unfinished run. */
  state: string;
  reason: string | undefined;
  records: MetricsRecord[];
}

export interface ExperimentAnalysis {
  blueprintId: string;
  configurationId: string;
  seed: number;
  state: string;
  reason: string | undefined;
  curve: CurveSummary;
  score: number | undefined;
  resultDir: string;
}

export interface PredictionVerdict {
  configurationId: string;
  prediction: string;
  verdict: "supported" | "refuted" | "inconclusive";
  explanation: string;
}

export interface StageAnalysis {
  stage: number;
  metric: string;
  score: "final" | "best" | "area";
  /**
   * What the scores are compared at equal amounts of: the axis, the budget every run of the
   * stage reached on it, runs that had to stay on steps, and (on steps) a confound warning.
   */
  axis?: { name: BudgetAxis; unit: string; budget: number | undefined; onSteps: string[]; confound?: string };
  experiments: ExperimentAnalysis[];
  /** The configurations this stage ran, with every seed measured so far (all stages). */
  configurations: { id: string; n: number; mean: number | undefined; low: number | undefined; high: number | undefined; failed: number; scores: number[] }[];
  verdicts: PredictionVerdict[];
  /**
   * The incumbent over every configuration so far against each other one, as the heuristic
   * planner judges them at this look (paired by seed or Welch, Holm, TOST, at the look's
   * level of the sequential design: `look`).
   */
  comparisons?: { incumbent: string; status: IncumbentStatus; rows: IncumbentComparison[]; look?: { look: number; level: number } };
  /** The best mean over every configuration measured so far (this stage and the ones before), with its seeds. */
  best: { id: string; mean: number; n: number } | undefined;
  outcomes: ExperimentOutcome[];
}
