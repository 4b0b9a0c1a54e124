import { formatNumber } from "../domain/configurations.ts";
import { followUpPower, followUps, pairedSeedsToAdd, seedsToAdd } from "../domain/follow-up.ts";
import type { IncumbentComparison, IncumbentRanking } from "../domain/incumbent.ts";
import type { ConfigurationSummary, StageRecord } from "../domain/planner.ts";
import { scoreLabel } from "../domain/score-label.ts";
import { withinRange } from "../domain/statistics.ts";
import type { KnobValue, Topic } from "../domain/topic.ts";
import type { ContrastVerdict } from "../domain/contrast-verdicts.ts";
import { contrastParagraph, levelText } from "./question-answer.ts";
import type { Paragraph } from "./inline.ts";

/**
 * The report's answer in words, from the computed figures only. When the question asks
 * contrasts (yes/no, or a direction: leader/domain/question.ts) the first paragraph answers
 * each in its own terms (question-answer.ts). Then the best and the runner-up with the effect and its interval, what
 * is tied, what is worse, whether it is decided, and the compute spent. Then what would
 * settle what is still open (seeds per configuration at 80% power), the extrapolations,
 * the comparison with the baseline, and why the campaign stopped. Pure.
 */
export type { Inline, Paragraph } from "./inline.ts";

export interface AnswerInputs {
  topic: Topic;
  summaries: ConfigurationSummary[];
  best: ConfigurationSummary | undefined;
  ranking: IncumbentRanking | undefined;
  stop: { reason: string; explanation: string } | null;
  history: StageRecord[];
  compute: { runs: number; unscored: number; gpuHours: number; gpuEntries: number };
  /** The question's contrasts against the baseline, judged at the campaign's last look (report-statistics.ts). */
  contrasts?: ContrastVerdict[];
}

export function settingsText(settings: Record<string, KnobValue>): string {
  return Object.entries(settings)
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(", ");
}

export function intervalText(low: number | undefined, high: number | undefined): string {
  return low === undefined || high === undefined ? "n/a" : `[${formatNumber(low)}, ${formatNumber(high)}]`;
}

export function answerParagraphs(inputs: AnswerInputs): Paragraph[] {
  const { topic, summaries, best, ranking, stop } = inputs;
  const metric = topic.metric;
  const stopped: Paragraph = [`Stopped: ${stop ? `${stop.reason}: ${stop.explanation.replace(/[.\s]+$/, "")}` : "(not stopped)"}.`];
  if (!metric) return [["The topic names no metric, so no configuration can be scored and the question is not answered."], stopped];
  if (!best || !ranking) return [["No configuration produced a score, so the question is not answered."], stopped];
  const sample = withinRange(best.sample, metric.range);
  const interval = sample.low === undefined ? "no interval (one seed)" : `95% interval ${intervalText(sample.low, sample.high)}`;
  const first: Paragraph = [
    "The best configuration measured is ",
    { strong: best.configuration.id },
    ` (${settingsText(best.configuration.settings) || "no knobs"}): ${scoreLabel(metric)} mean ${formatNumber(sample.mean)} over ${sample.n} seed(s), ${interval}.`,
  ];
  const runnerUp = ranking.runnerUp;
  if (runnerUp) {
    const other = summaries.find((summary) => summary.configuration.id === runnerUp.otherId)!;
    first.push(
      ` The runner-up is ${runnerUp.otherId} (mean ${formatNumber(other.sample.mean)}, ${other.sample.n} seed(s)): ${best.configuration.id} leads it by ${formatNumber(runnerUp.advantage)}${effectText(runnerUp)}, ${verdictText(runnerUp, metric.equivalence)}.`,
    );
  }
  const tied = ids(ranking, "equivalent");
  const worse = ids(ranking, "worse");
  if (tied.length > 0) first.push(` The same as ${best.configuration.id} within ${formatNumber(metric.equivalence)}: ${tied.join(", ")}.`);
  if (worse.length > 0 && ranking.status !== "separated") first.push(` Worse beyond seed noise: ${worse.join(", ")}.`);
  first.push(` ${decisionText(ranking, metric.equivalence)}`);
  first.push(` ${computeText(inputs)}`);

  const contrasts = inputs.contrasts ?? [];
  const paragraphs: Paragraph[] = contrasts.length > 0 ? [contrastParagraph(contrasts, metric.equivalence), first] : [first];
  const settle = settleText(ranking, summaries, metric.equivalence);
  if (settle) paragraphs.push([settle]);
  const extrapolated = extrapolations(inputs.history);
  if (extrapolated.length > 0) paragraphs.push([`Extrapolated beyond the tested range (flagged in the stage plans): ${extrapolated.join("; ")}.`]);
  paragraphs.push(...baselineParagraphs(inputs));
  const refused = refusedText(inputs.history);
  if (refused) paragraphs.push([refused]);
  paragraphs.push(stopped);
  return paragraphs;
}

/** Configurations dropped before running because the engine would refuse them (design/refuse-configurations.ts). */
export function refusedText(history: StageRecord[]): string | undefined {
  const refused = history.flatMap((record) => (record.plan.refused ?? []).map((item) => ({ stage: record.plan.stage, ...item })));
  if (refused.length === 0) return undefined;
  const items = refused.map((item) => `${item.configurationId} (${settingsText(item.settings)}) in stage ${item.stage}: ${item.reasons.join("; ")}`);
  return `Left out before running, outside what the engine accepts (the rest of the campaign went on without them): ${items.join("; ")}.`;
}

function ids(ranking: IncumbentRanking, verdict: IncumbentComparison["verdict"]): string[] {
  return ranking.comparisons.filter((comparison) => comparison.verdict === verdict).map((comparison) => comparison.otherId);
}

function effectText(comparison: IncumbentComparison): string {
  const parts: string[] = [];
  if (comparison.low !== undefined) parts.push(`Holm-adjusted ${levelText(comparison.level)} interval ${intervalText(comparison.low, comparison.high)}`);
  if (comparison.effect) parts.push(`Hedges' g ${formatNumber(comparison.effect.g)} ${intervalText(comparison.effect.low, comparison.effect.high)}`);
  if (comparison.pHolm !== undefined) parts.push(`Holm p ${formatNumber(comparison.pHolm)}`);
  return parts.length > 0 ? ` (${parts.join("; ")})` : "";
}

function verdictText(comparison: IncumbentComparison, equivalence: number | undefined): string {
  switch (comparison.verdict) {
    case "worse":
      return "beyond seed noise";
    case "equivalent":
      return `the same within the equivalence margin ${formatNumber(equivalence)}`;
    case "open":
      return "within seed noise";
    case "undecidable":
      return "with too few seeds to compare (fewer than two scored on a side)";
  }
}

function decisionText(ranking: IncumbentRanking, equivalence: number | undefined): string {
  switch (ranking.status) {
    case "separated":
      return `Decided: ${ranking.incumbent.configuration.id} is better than each of the ${ranking.comparisons.length} other scored configuration(s) beyond seed noise.`;
    case "tied":
      return `Decided: a tie at the top within ${formatNumber(equivalence)}; the rest are worse beyond seed noise.`;
    case "alone":
      return "Not decided: no other configuration was scored to compare with.";
    case "open": {
      const open = ranking.comparisons
        .filter((comparison) => comparison.verdict === "open" || comparison.verdict === "undecidable")
        .map((comparison) => comparison.otherId);
      return `Not decided: ${ranking.incumbent.configuration.id} is not separated from ${open.join(", ")}${equivalence === undefined ? " (and with no equivalence margin declared, a tie cannot be shown)" : ""}.`;
    }
  }
}

function computeText(inputs: AnswerInputs): string {
  const { compute, history } = inputs;
  const gpu =
    compute.gpuEntries > 0
      ? `${formatNumber(compute.gpuHours)} GPU-hours`
      : (inputs.topic.base?.gpus ?? 0) === 0
        ? "no GPU"
        : "GPU-hours unknown (the ledger records none)";
  return `Compute spent: ${compute.runs} run(s) over ${history.length} stage(s)${compute.unscored > 0 ? ` (${compute.unscored} not scored)` : ""}, ${gpu}.`;
}

/** "3 more seeds of lr-0.5 and 2 of lr-1.25 would separate a 0.05 difference with 80% power". */
function settleText(ranking: IncumbentRanking, summaries: ConfigurationSummary[], equivalence: number | undefined): string | undefined {
  if (ranking.status !== "open") return undefined;
  const plans = followUps(ranking, summaries, equivalence);
  const additions = seedsToAdd(ranking, summaries, plans, Number.POSITIVE_INFINITY);
  const incumbentId = ranking.incumbent.configuration.id;
  const sentences = plans.map((plan) => {
    if (!Number.isFinite(plan.seedsPerSide)) {
      return plan.std === undefined
        ? `${incumbentId} against ${plan.otherId} needs at least two scored seeds on each side before any count can be given`
        : `no number of seeds would settle ${incumbentId} against ${plan.otherId}: their means are equal${equivalence === undefined ? "; declare `metric.equivalence` so that a tie can be shown" : ""}`;
    }
    const what = plan.kind === "separate" ? `separate a ${formatNumber(plan.size)} difference` : `show them the same within ${formatNumber(plan.size)}`;
    const matched = ranking.comparisons.find((comparison) => comparison.otherId === plan.otherId)?.matched;
    if (plan.paired && matched) {
      // Sized on the seed-matched differences (domain/follow-up.ts), which are compared paired from four shared seeds.
      const add = pairedSeedsToAdd(plan.seedsPerSide, matched.seeds);
      return `${add} more seed(s) run on both ${incumbentId} and ${plan.otherId} (${matched.seeds + add} shared seeds, compared paired) would ${what} with ${followUpPower * 100}% power`;
    }
    const more = (id: string): number => Math.max(0, plan.seedsPerSide - (summaries.find((summary) => summary.configuration.id === id)?.sample.n ?? 0));
    return `${more(incumbentId)} more seed(s) of ${incumbentId} and ${more(plan.otherId)} of ${plan.otherId} (${plan.seedsPerSide} each) would ${what} with ${followUpPower * 100}% power`;
  });
  const total = additions.reduce((sum, item) => sum + (Number.isFinite(item.add) ? item.add : 0), 0);
  return `What would settle it: ${sentences.join("; ")}${total > 0 && plans.length > 1 ? ` (about ${total} run(s) for all of them, with seed noise as measured so far)` : " (with seed noise as measured so far)"}.`;
}

function extrapolations(history: StageRecord[]): string[] {
  return history.flatMap((record) =>
    record.plan.configurations.flatMap((configuration) =>
      configuration.extrapolation === undefined ? [] : [`${configuration.id} in stage ${record.plan.stage} (${configuration.extrapolation})`],
    ),
  );
}

function baselineParagraphs(inputs: AnswerInputs): Paragraph[] {
  const { summaries, best, ranking } = inputs;
  const metric = inputs.topic.metric!;
  const paragraphs: Paragraph[] = [];
  const baseline = summaries.find((summary) => summary.configuration.id === "baseline");
  if (baseline && baseline !== best && baseline.sample.n > 0 && best) {
    const difference = best.sample.mean - baseline.sample.mean;
    const relative = baseline.sample.mean !== 0 ? ` (${formatNumber((Math.abs(difference) / Math.abs(baseline.sample.mean)) * 100)}%)` : "";
    const comparison = ranking?.comparisons.find((item) => item.otherId === "baseline");
    const shown = withinRange(baseline.sample, metric.range);
    paragraphs.push([
      `Against the baseline (mean ${formatNumber(baseline.sample.mean)}, 95% interval ${intervalText(shown.low, shown.high)}), its mean differs by ${formatNumber(difference)}${relative}, ${comparison ? verdictText(comparison, metric.equivalence) : "with too few seeds to compare"}${comparison?.pHolm === undefined ? "" : ` (Holm p ${formatNumber(comparison.pHolm)})`}.`,
    ]);
  } else if (baseline === best && summaries.filter((summary) => summary.sample.n > 0).length > 1) {
    paragraphs.push(["No other configuration has a better mean than the baseline."]);
  }
  return paragraphs;
}
