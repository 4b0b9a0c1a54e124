import type { LedgerSummary } from "../../campaign/index.ts";
import { formatNumber } from "../domain/configurations.ts";
import type { ConfigurationSummary, StageRecord } from "../domain/planner.ts";
import type { ExperimentRow } from "./experiment-row.ts";
import type { IncumbentRanking } from "../domain/incumbent.ts";
import type { Topic } from "../domain/topic.ts";
import { axisUnits, defaultBudgetAxis } from "../domain/budget-axis.ts";

/**
 * What limits the answer, computed from the same figures as the answer: few seeds,
 * overlapping intervals, failed or missing runs with their reasons, a stop forced by a
 * budget or a failure, stages planned but not analyzed, result files that changed since
 * their analysis, costs the ledger cannot account for, and model claims that cite no
 * experiment. Each caveat is one sentence a reader can check against the tables. Pure.
 */
export interface CaveatInputs {
  topic: Topic;
  summaries: ConfigurationSummary[];
  best: ConfigurationSummary | undefined;
  /** The best against every other configuration (domain/incumbent.ts). */
  ranking?: IncumbentRanking | undefined;
  experiments: ExperimentRow[];
  stop: { reason: string; explanation: string } | null;
  history: StageRecord[];
  plannedStages: number[];
  ledger: LedgerSummary;
  ledgerProblems: number;
  flaggedClaims: number;
  rescored: { blueprintId: string; recorded: number | undefined; now: number | undefined }[];
}

/** Two-sided 95% t quantiles (97.5th percentiles) for 2..5 seeds (1..4 degrees of freedom): how wide few seeds make an interval. */
const smallSampleT: Record<number, number> = { 2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776 };

export function reportCaveats(inputs: CaveatInputs): string[] {
  const caveats: string[] = [];
  caveats.push(...stopCaveats(inputs.stop));
  if (!inputs.topic.metric) return [...caveats, ...costCaveats(inputs)];

  const consuming = Object.keys(inputs.topic.knobs).filter((knob) => defaultBudgetAxis([knob]) === "episodes");
  if (inputs.topic.budgetAxis === "steps" && consuming.length > 0) {
    caveats.push(
      `Scores are compared per optimizer step, yet ${consuming.join(", ")} change${consuming.length === 1 ? "s" : ""} how much data a step consumes: the stage analyses give each configuration's episodes per step; budget_axis: episodes compares at equal data.`,
    );
  } else if (inputs.topic.budgetAxis !== "steps") {
    caveats.push(
      `Scores are compared at equal ${axisUnits[inputs.topic.budgetAxis]} (budget_axis: ${inputs.topic.budgetAxis}), each stage at the budget all its runs reached.`,
    );
  }

  const scored = inputs.summaries.filter((summary) => summary.sample.n > 0);
  const thin = inputs.summaries.filter((summary) => summary.sample.n < 2);
  if (thin.length > 0) {
    caveats.push(
      `${thin.length} of ${inputs.summaries.length} configuration(s) have fewer than two scored seeds, so no 95% interval and no comparison beyond seed noise: ${thin.map((summary) => `${summary.configuration.id} (${summary.sample.n})`).join(", ")}.`,
    );
  }
  // Counted on the best configuration, the one the answer is about (not the thinnest of all).
  const bestSeeds = inputs.best?.sample.n ?? 0;
  if (inputs.best && bestSeeds in smallSampleT) {
    caveats.push(
      `Few seeds: the best configuration, ${inputs.best.configuration.id}, has ${bestSeeds} scored seed(s); its 95% interval is the mean ± ${smallSampleT[bestSeeds]} standard errors, so only large differences separate.`,
    );
  }
  if (inputs.best && inputs.ranking) {
    const open = inputs.ranking.comparisons.filter((comparison) => comparison.verdict === "open");
    if (open.length > 0) {
      const meanOf = (id: string): number | undefined => scored.find((summary) => summary.configuration.id === id)?.sample.mean;
      caveats.push(
        `${inputs.best.configuration.id} is not separated from ${open.map((comparison) => `${comparison.otherId} (mean ${formatNumber(meanOf(comparison.otherId))})`).join(", ")} (tested as the method line states, Holm-corrected at the campaign's last look): their order is within seed noise.`,
      );
    }
  }

  const unscored = inputs.experiments.filter((experiment) => experiment.state !== "succeeded" || experiment.score === undefined);
  if (unscored.length > 0) {
    caveats.push(
      `${unscored.length} of ${inputs.experiments.length} experiment(s) are not counted in the scores: ${unscored.map((experiment) => `${experiment.blueprintId} (${experiment.state}${experiment.reason ? `: ${experiment.reason}` : ""})`).join("; ")}.`,
    );
  }
  for (const run of inputs.rescored) {
    caveats.push(
      `The result directory of ${run.blueprintId} changed after its stage was analyzed: the analysis scored it ${formatNumber(run.recorded)}, its files now give ${formatNumber(run.now)}; the figures here use the analysis.`,
    );
  }
  const analyzed = new Set(inputs.history.map((record) => record.plan.stage));
  const unanalyzed = inputs.plannedStages.filter((stage) => !analyzed.has(stage));
  if (unanalyzed.length > 0) {
    caveats.push(
      `Stage(s) ${unanalyzed.join(", ")} were planned (stages/<n>/plan.md) but are not in this analysis: they did not run to the end of their stage.`,
    );
  }
  if (inputs.flaggedClaims > 0)
    caveats.push(`${inputs.flaggedClaims} claim(s) of the model-written conclusion are not supported by any experiment of this campaign (flagged below).`);
  return [...caveats, ...costCaveats(inputs)];
}

function stopCaveats(stop: CaveatInputs["stop"]): string[] {
  if (stop === null) return ["The campaign has not stopped: this report covers the stages analyzed so far."];
  const explanation = stop.explanation.replace(/[.\s]+$/, "");
  switch (stop.reason) {
    case "budget":
      return [`Stopped by a budget (${explanation}): the search did not reach its own end, so a better configuration may be unmeasured.`];
    case "no-improvement":
      return ["Stopped because the last stage brought no improvement: the answer is the best configuration measured, not a proven optimum."];
    case "exhausted":
      return ["Stopped because every candidate around the best was measured: the answer holds only over the knob values tried."];
    case "separated":
    case "equivalent":
      return [];
    default:
      return [`Stopped early (${stop.reason}): ${explanation}.`];
  }
}

function costCaveats(inputs: CaveatInputs): string[] {
  const caveats: string[] = [];
  if (inputs.ledgerProblems > 0) caveats.push(`ledger.jsonl has ${inputs.ledgerProblems} unreadable line(s); the costs below leave them out.`);
  const gpus = inputs.topic.base?.gpus ?? 0;
  if (gpus > 0 && inputs.ledger.gpu.entries === 0 && inputs.experiments.length > 0) {
    caveats.push(`The ledger records no GPU use although each experiment asks for ${gpus} GPU(s): GPU-hours are unknown, not zero.`);
  }
  return caveats;
}
