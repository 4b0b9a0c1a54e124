import { alpha, seedsToSeparate, seedsToShowEquivalence } from "./comparisons.ts";
import { minimumPairedSeeds, type IncumbentComparison, type IncumbentRanking } from "./incumbent.ts";
import type { ConfigurationSummary } from "./planner.ts";

/**
 * What would settle each open comparison of the incumbent: how many seeds per side, and
 * whether they would more likely separate the two (a difference the size of the one
 * observed, at 80% power) or show them the same within the topic's margin. The planner
 * sizes its replication stage with it; the report says it in words. Pure.
 */
export const followUpPower = 0.8;

/** The most seeds per configuration a follow-up proposes (the topic's own limit). */
export const maxSeedsPerConfiguration = 30;

export interface ComparisonFollowUp {
  otherId: string;
  /** separate: detect the observed difference; equivalence: show |difference| < margin. */
  kind: "separate" | "equivalence";
  /** The difference (separate) or the margin (equivalence) the seeds are sized for. */
  size: number;
  /** Seeds per side the test would need; Infinity when no count would do. */
  seedsPerSide: number;
  /** The seed standard deviation assumed (pooled over the two, or over every configuration). */
  std: number | undefined;
  /** Sides that share seeds (compared paired, domain/incumbent.ts): the next seed goes to both. */
  paired?: boolean;
}

/** Pooled standard deviation of the given samples (each with two seeds or more), or undefined. */
export function pooledStd(summaries: readonly ConfigurationSummary[]): number | undefined {
  let squares = 0;
  let df = 0;
  for (const summary of summaries) {
    if (summary.sample.n < 2) continue;
    squares += summary.sample.std ** 2 * (summary.sample.n - 1);
    df += summary.sample.n - 1;
  }
  return df > 0 ? Math.sqrt(squares / df) : undefined;
}

export function followUps(
  ranking: IncumbentRanking,
  summaries: readonly ConfigurationSummary[],
  equivalence: number | undefined,
  /** The level the next look's tests will be held to (0.05, or a sequential design's share of it). */
  level = alpha,
): ComparisonFollowUp[] {
  const open = ranking.comparisons.filter((comparison) => comparison.verdict === "open" || comparison.verdict === "undecidable");
  // Under Holm the open comparisons come after the settled ones, so each is held to about level / (open ones).
  const significance = level / Math.max(1, open.length);
  const everyone = pooledStd(summaries);
  return open.map((comparison) => {
    const other = summaries.find((summary) => summary.configuration.id === comparison.otherId);
    // Sides that share seeds (compared paired from four shared seeds on, guarded below) are sized
    // as paired: a seed a side adds one difference of spread s_d, as two independent seeds of
    // spread s_d/sqrt(2) would, and the per-side counts below are then matched seeds.
    if (comparison.matched) return { ...settle(comparison, matchedSeedStd(comparison.matched), equivalence, significance), paired: true };
    const pair = other ? pooledStd([ranking.incumbent, other]) : undefined;
    const std = pair !== undefined && pair > 0 ? pair : everyone;
    return settle(comparison, std, equivalence, significance);
  });
}

function settle(comparison: IncumbentComparison, std: number | undefined, equivalence: number | undefined, significance: number): ComparisonFollowUp {
  const difference = Math.abs(comparison.advantage);
  if (std === undefined) return { otherId: comparison.otherId, kind: "separate", size: difference, seedsPerSide: Number.POSITIVE_INFINITY, std };
  const { kind, seedsPerSide } = seedsToSettle(difference, std, equivalence, significance);
  return { otherId: comparison.otherId, kind, size: kind === "equivalence" ? equivalence! : difference, seedsPerSide, std };
}

/** Seeds per side at 80% power that would settle a difference: separate it, or show it within the margin, whichever needs fewer. */
export function seedsToSettle(
  difference: number,
  std: number,
  equivalence: number | undefined,
  significance: number,
): { kind: "separate" | "equivalence"; seedsPerSide: number } {
  const separate = seedsToSeparate(Math.abs(difference), std, followUpPower, significance);
  const same = equivalence === undefined ? Number.POSITIVE_INFINITY : seedsToShowEquivalence(difference, equivalence, std, followUpPower, significance);
  return same < separate ? { kind: "equivalence", seedsPerSide: same } : { kind: "separate", seedsPerSide: separate };
}

/** The per-side spread two seed-matched sides are sized with: one seed on both adds one difference of spread s_d, as two independent seeds of s_d/√2 would. */
export function matchedSeedStd(matched: NonNullable<IncumbentComparison["matched"]>): number {
  return matched.differenceStd / Math.SQRT2;
}

/** Seeds to run on both seed-matched sides so that `seedsPerSide` shared seeds exist, at least one and enough to be compared paired. */
export function pairedSeedsToAdd(seedsPerSide: number, sharedSeeds: number): number {
  return Math.max(1, Math.max(seedsPerSide, minimumPairedSeeds) - sharedSeeds);
}

/**
 * Seeds to add per configuration to carry out the follow-ups, racing: each open comparison
 * gets its next seeds on the side where they shrink the comparison's standard error most
 * (Welch's error is s²/n summed over the two sides, so a seed goes where s²/n − s²/(n+1) is
 * larger: Neyman's allocation, one step at a time). A noisy challenger against a steady
 * incumbent gets the seeds itself; a steady one against a noisy incumbent lets the incumbent
 * take them, once for all its comparisons. A paired comparison gives its seed to both
 * sides (a difference needs the seed run on each; no side is chosen, so no spread steers
 * it). A side with fewer than two seeds always gets
 * them (its variance is what is missing). A side's spread is floored at the spread pooled
 * over every configuration: choosing sides by their own spreads alone starves a side whose
 * spread came out small by chance, and its small spread then inflates Welch's t (simulated
 * under no difference, bench/research.bench.ts: 0.066 false claims with a floor of half the
 * pooled spread, 0.039 with this one, 0.024 giving both sides a seed). Each
 * side gets at least one and at most `maxAdd`, up to what its comparison needs; a
 * configuration that gets none is left out. The incumbent, when it gets seeds, comes first.
 */
export function seedsToAdd(
  ranking: IncumbentRanking,
  summaries: readonly ConfigurationSummary[],
  plans: readonly ComparisonFollowUp[],
  maxAdd: number,
): { id: string; add: number }[] {
  const summaryOf = (id: string): ConfigurationSummary | undefined => summaries.find((summary) => summary.configuration.id === id);
  const countOf = (id: string): number => summaryOf(id)?.sample.n ?? 0;
  const capped = (target: number, id: string): number => {
    const wanted = Number.isFinite(target) ? Math.min(target, maxSeedsPerConfiguration) - countOf(id) : maxAdd;
    return Math.min(maxAdd, Math.max(1, wanted));
  };
  if (plans.length === 0) return [];
  const incumbentId = ranking.incumbent.configuration.id;
  const floor = pooledStd(summaries) ?? 0;
  const gain = (id: string): number => {
    const summary = summaryOf(id);
    if (!summary || summary.sample.n < 2) return Number.POSITIVE_INFINITY;
    const spread = Math.max(summary.sample.std, floor) ** 2;
    return spread / summary.sample.n - spread / (summary.sample.n + 1);
  };
  const incumbentGain = gain(incumbentId);
  let incumbentAdd = 0;
  const challengers: { id: string; add: number }[] = [];
  for (const plan of plans) {
    const challengerGain = gain(plan.otherId);
    const both = plan.paired === true || (!Number.isFinite(incumbentGain) && !Number.isFinite(challengerGain));
    if (both || challengerGain >= incumbentGain) challengers.push({ id: plan.otherId, add: capped(plan.seedsPerSide, plan.otherId) });
    if (both || incumbentGain > challengerGain) incumbentAdd = Math.max(incumbentAdd, capped(plan.seedsPerSide, incumbentId));
  }
  return [...(incumbentAdd > 0 ? [{ id: incumbentId, add: incumbentAdd }] : []), ...challengers];
}
