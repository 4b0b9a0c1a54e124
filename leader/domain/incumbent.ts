import { bestConfiguration, type Goal, type SeedScores } from "./configurations.ts";
import {
  alpha,
  clipDifference,
  equivalenceTest,
  guardedEquivalenceTest,
  guardedWelchTest,
  hedgesG,
  holmAdjust,
  holmIntervalLevel,
  pairedEquivalenceTest,
  pairedTest,
  welchTest,
  type Welch,
} from "./comparisons.ts";
import type { ConfigurationSummary } from "./planner.ts";
import type { TopicMetric } from "./topic.ts";

/**
 * The incumbent (the best mean so far) against every other scored configuration: one
 * Welch test each, Holm's correction over the family, and TOST against the topic's
 * equivalence margin. The planner decides from `status`; the analysis and the report show
 * the same rows, so all three call "separated" and "tied" the same thing. Every interval
 * is Holm-adjusted (comparisons.ts `holmIntervalLevel`): it excludes 0 exactly when the
 * verdict is "worse", and the equivalence interval lies inside the margin exactly when it
 * is "equivalent", so no interval contradicts its verdict.
 *
 * Given each configuration's scores by seed (`paired`), a comparison whose two sides share
 * at least two seeds is paired instead (common random numbers, as F-Race compares): the
 * paired t-test and TOST on the seed-matched differences, seeds the other side lacks left
 * out, the advantage the mean matched difference, from four shared seeds on
 * (`minimumPairedSeeds`); at two or three, Welch's test with its error raised to the paired
 * one where that is larger (guardedWelchTest:
 * valid when a seed moves the sides oppositely, never more powerful than Welch); with fewer,
 * Welch. The rule is fixed before any data (the campaign's design, domain/sequential-design.ts),
 * never chosen per comparison by which test is more powerful. Pure.
 */
export type ComparisonVerdict =
  /** The incumbent is better beyond seed noise (Holm-adjusted Welch p < alpha). */
  | "worse"
  /** The two are the same within the equivalence margin (Holm-adjusted TOST p < alpha). */
  | "equivalent"
  /** Neither shown yet: more seeds could settle it. */
  | "open"
  /** Fewer than two scored seeds on a side: no variance to judge by. */
  | "undecidable";

export interface IncumbentComparison {
  otherId: string;
  /** How much better the incumbent is (positive = better for the goal), in the metric's units. */
  advantage: number;
  /** Holm-adjusted interval of the advantage (at `level`), clipped to what the metric's range allows. */
  low: number | undefined;
  high: number | undefined;
  /** The confidence level of `low`/`high` and of the effect's interval (0.95 when nothing is adjusted). */
  level: number;
  /** The Holm-adjusted TOST interval (at 1 − 2γ): inside ±margin exactly when the verdict is "equivalent". */
  equivalenceLow?: number;
  equivalenceHigh?: number;
  /** Hedges' g of the advantage, with its approximate interval at `level`. */
  effect: { g: number; low: number; high: number } | undefined;
  df: number | undefined;
  p: number | undefined;
  pHolm: number | undefined;
  /** TOST p-value against the margin (raw and Holm-adjusted); undefined without a margin. */
  equivalenceP: number | undefined;
  equivalencePHolm: number | undefined;
  verdict: ComparisonVerdict;
  /**
   * Set when the two sides share two or more seeds: how many, the spread of their differences,
   * and whether the test was paired on them (three or more) or Welch guarded by them (two).
   */
  matched?: { seeds: number; differenceStd: number; paired: boolean };
}

export type IncumbentStatus =
  /** Every other configuration is worse beyond seed noise. */
  | "separated"
  /** None is open; at least one is the same as the incumbent within the margin. */
  | "tied"
  /** Some comparison is open or undecidable. */
  | "open"
  /** No other scored configuration. */
  | "alone";

export interface IncumbentRanking {
  incumbent: ConfigurationSummary;
  comparisons: IncumbentComparison[];
  status: IncumbentStatus;
  /** The closest other configuration by mean (the runner-up). */
  runnerUp: IncumbentComparison | undefined;
}

export function rankAgainstIncumbent(
  summaries: ConfigurationSummary[],
  metric: Pick<TopicMetric, "goal"> & { range?: [number, number]; equivalence?: number },
  /** The level the comparisons are held to: 0.05, or a look's share of it (sequential-design.ts). */
  level = alpha,
  /** Each configuration's scores by seed: compare on seed-matched differences where two or more seeds match. */
  paired?: SeedScores,
): IncumbentRanking | undefined {
  const goal: Goal = metric.goal;
  const incumbent = bestConfiguration(summaries, goal);
  if (!incumbent) return undefined;
  const sign = goal === "maximize" ? 1 : -1;
  const others = summaries.filter((summary) => summary !== incumbent && summary.sample.n > 0);
  const raw = others.map((other) => {
    const matched = matchedDifferences(paired, incumbent.configuration.id, other.configuration.id);
    const differences = matched && matched.length >= minimumPairedSeeds ? matched : undefined;
    const test = (level: number): Welch | undefined =>
      differences
        ? pairedTest(differences, level)
        : matched
          ? guardedWelchTest(incumbent.scores, other.scores, matched, level)
          : welchTest(incumbent.scores, other.scores, level);
    const welch = test(1 - alpha);
    const equivalence =
      metric.equivalence === undefined
        ? undefined
        : differences
          ? pairedEquivalenceTest(differences, metric.equivalence)
          : matched
            ? guardedEquivalenceTest(incumbent.scores, other.scores, matched, metric.equivalence)
            : equivalenceTest(incumbent.scores, other.scores, metric.equivalence);
    const advantage = sign * (welch && differences ? welch.difference : incumbent.sample.mean - other.sample.mean);
    const pairing = matched ? { seeds: matched.length, differenceStd: standardDeviation(matched), paired: differences !== undefined } : undefined;
    return { other, welch, test, equivalence, advantage, pairing };
  });
  const pHolm = holmAdjust(raw.map((item) => item.welch?.p));
  const equivalenceHolm = holmAdjust(raw.map((item) => item.equivalence?.p));
  const family = pHolm.filter((p) => p !== undefined).length;
  const equivalenceFamily = equivalenceHolm.filter((p) => p !== undefined).length;
  const comparisons = raw.map((item, index): IncumbentComparison => {
    const adjusted = pHolm[index];
    const adjustedEquivalence = equivalenceHolm[index];
    // The intervals are computed again at the level their Holm step tests at.
    const intervalLevel = holmIntervalLevel(item.welch?.p, adjusted, family, level);
    const welch = item.welch ? item.test(intervalLevel) : undefined;
    const interval = welch ? clipDifference(sign > 0 ? welch.low : -welch.high, sign > 0 ? welch.high : -welch.low, metric.range) : undefined;
    const effect = hedgesG(incumbent.scores, item.other.scores, intervalLevel);
    const tost =
      item.equivalence === undefined ? undefined : item.test(2 * holmIntervalLevel(item.equivalence.p, adjustedEquivalence, equivalenceFamily, level) - 1);
    const tostInterval = tost ? clipDifference(sign > 0 ? tost.low : -tost.high, sign > 0 ? tost.high : -tost.low, metric.range) : undefined;
    // A difference inside the margin is practically none, even when it is beyond noise.
    const verdict: ComparisonVerdict = !item.welch
      ? "undecidable"
      : adjustedEquivalence !== undefined && adjustedEquivalence < level
        ? "equivalent"
        : adjusted !== undefined && adjusted < level && item.advantage > 0
          ? "worse"
          : "open";
    return {
      otherId: item.other.configuration.id,
      advantage: item.advantage,
      low: interval?.[0],
      high: interval?.[1],
      level: intervalLevel,
      ...(tostInterval ? { equivalenceLow: tostInterval[0], equivalenceHigh: tostInterval[1] } : {}),
      effect: effect ? (sign > 0 ? effect : { g: -effect.g, low: -effect.high, high: -effect.low }) : undefined,
      df: item.welch?.df,
      p: item.welch?.p,
      pHolm: adjusted,
      equivalenceP: item.equivalence?.p,
      equivalencePHolm: adjustedEquivalence,
      verdict,
      ...(item.pairing ? { matched: item.pairing } : {}),
    };
  });
  const status: IncumbentStatus =
    comparisons.length === 0
      ? "alone"
      : comparisons.every((comparison) => comparison.verdict === "worse")
        ? "separated"
        : comparisons.every((comparison) => comparison.verdict === "worse" || comparison.verdict === "equivalent")
          ? "tied"
          : "open";
  const runnerUp = [...comparisons].sort((left, right) => left.advantage - right.advantage)[0];
  return { incumbent, comparisons, status, runnerUp };
}

/** The incumbent's score minus the other's at each seed both recorded, or undefined under two. */
function matchedDifferences(paired: SeedScores | undefined, incumbentId: string, otherId: string): number[] | undefined {
  const mine = paired?.get(incumbentId);
  const theirs = paired?.get(otherId);
  if (!mine || !theirs) return undefined;
  const differences = [...mine]
    .filter(([seed]) => theirs.has(seed))
    .sort(([left], [right]) => left - right)
    .map(([seed, score]) => score - theirs.get(seed)!);
  return differences.length >= 2 ? differences : undefined;
}

function standardDeviation(values: readonly number[]): number {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  return Math.sqrt(values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (values.length - 1));
}

/**
 * Fewest shared seeds a comparison is paired on. Fewer give the paired t one or two degrees
 * of freedom, and simulated campaigns (bench/research.bench.ts) then made false "worse"
 * claims past the design's 0.05 (0.065 paired from 2 seeds, 0.059 from 3, with independent
 * seeds): the design assumes consecutive looks' statistics alike, and a spread estimated
 * from so few differences makes them far less so. From 4 every simulated rate holds (0.045
 * independent, 0.029 at correlation 0.9, 0.049 at -0.45). Fewer shared seeds are compared by
 * guardedWelchTest instead.
 */
export const minimumPairedSeeds = 4;

/**
 * One configuration against a reference by the rule above (paired from the shared seeds,
 * guarded or Welch), whichever leads: the comparison row, and whether `member` is the
 * leader (the row's advantage is the leader's). For comparisons that are not the
 * incumbent's: a contrast against the baseline, a stage's "beats" prediction.
 */
export function comparePair(
  member: ConfigurationSummary,
  reference: ConfigurationSummary,
  metric: Pick<TopicMetric, "goal"> & { range?: [number, number]; equivalence?: number },
  level: number,
  scores: SeedScores | undefined,
): { row: IncumbentComparison; memberLeads: boolean } | undefined {
  const ranking = rankAgainstIncumbent([member, reference], metric, level, scores);
  const row = ranking?.comparisons[0];
  return ranking && row ? { row, memberLeads: ranking.incumbent === member } : undefined;
}
