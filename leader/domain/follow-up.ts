import { alpha, seedsToSeparate, seedsToShowEquivalence } from "./comparisons.ts";
import type { IncumbentComparison, IncumbentRanking } from "./incumbent.ts";
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

export function followUps(ranking: IncumbentRanking, summaries: readonly ConfigurationSummary[], equivalence: number | undefined): ComparisonFollowUp[] {
  const open = ranking.comparisons.filter((comparison) => comparison.verdict === "open" || comparison.verdict === "undecidable");
  // Under Holm the open comparisons come after the settled ones, so each is held to about alpha / (open ones).
  const significance = alpha / Math.max(1, open.length);
  const everyone = pooledStd(summaries);
  return open.map((comparison) => {
    const other = summaries.find((summary) => summary.configuration.id === comparison.otherId);
    const pair = other ? pooledStd([ranking.incumbent, other]) : undefined;
    const std = pair !== undefined && pair > 0 ? pair : everyone;
    return settle(comparison, std, equivalence, significance);
  });
}

function settle(comparison: IncumbentComparison, std: number | undefined, equivalence: number | undefined, significance: number): ComparisonFollowUp {
  const difference = Math.abs(comparison.advantage);
  if (std === undefined) return { otherId: comparison.otherId, kind: "separate", size: difference, seedsPerSide: Number.POSITIVE_INFINITY, std };
  const separate = seedsToSeparate(difference, std, followUpPower, significance);
  const same = equivalence === undefined ? Number.POSITIVE_INFINITY : seedsToShowEquivalence(difference, equivalence, std, followUpPower, significance);
  return same < separate
    ? { otherId: comparison.otherId, kind: "equivalence", size: equivalence!, seedsPerSide: same, std }
    : { otherId: comparison.otherId, kind: "separate", size: difference, seedsPerSide: separate, std };
}

/**
 * Seeds to add per configuration to carry out the follow-ups: each challenger up to its
 * comparison's count, the incumbent up to the largest; at least one and at most `maxAdd`
 * each (a stage is one step of a race, not the whole race). A comparison no count settles
 * still gets `maxAdd` (its variance estimate is what is missing).
 */
export function seedsToAdd(
  ranking: IncumbentRanking,
  summaries: readonly ConfigurationSummary[],
  plans: readonly ComparisonFollowUp[],
  maxAdd: number,
): { id: string; add: number }[] {
  const countOf = (id: string): number => summaries.find((summary) => summary.configuration.id === id)?.sample.n ?? 0;
  const capped = (target: number, id: string): number => {
    const wanted = Number.isFinite(target) ? Math.min(target, maxSeedsPerConfiguration) - countOf(id) : maxAdd;
    return Math.min(maxAdd, Math.max(1, wanted));
  };
  const challengers = plans.map((plan) => ({ id: plan.otherId, add: capped(plan.seedsPerSide, plan.otherId) }));
  if (challengers.length === 0) return [];
  const incumbentId = ranking.incumbent.configuration.id;
  const incumbent = Math.max(...plans.map((plan) => capped(plan.seedsPerSide, incumbentId)));
  return [{ id: incumbentId, add: incumbent }, ...challengers];
}
