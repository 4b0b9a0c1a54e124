import { normalQuantile, studentTCdf, studentTQuantile } from "./student-t.ts";

/**
 * Two-sample comparisons that hold up with two to five seeds a side: Welch's t (no equal
 * variance assumed), the difference and a standardized effect with intervals, two one-sided
 * tests (TOST) for "the same within a margin", Holm's correction over a stage's
 * comparisons, and the seeds a follow-up needs. Pure and deterministic.
 */
export type Goal = "maximize" | "minimize";

/** Significance level of every test the leader makes (two-sided; TOST uses it per side). */
export const alpha = 0.05;

export interface Welch {
  /** mean(a) − mean(b). */
  difference: number;
  standardError: number;
  /** Welch–Satterthwaite degrees of freedom (Infinity when both variances are 0). */
  df: number;
  t: number;
  /** Two-sided p-value of "the means are equal". */
  p: number;
  /** Two-sided (1 − alpha) interval of the difference. */
  low: number;
  high: number;
}

interface Moments {
  n: number;
  mean: number;
  variance: number;
}

function moments(values: readonly number[]): Moments {
  const n = values.length;
  const mean = values.reduce((sum, value) => sum + value, 0) / n;
  const variance = n > 1 ? values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (n - 1) : Number.NaN;
  return { n, mean, variance };
}

/**
 * Welch's two-sample t-test of a against b; undefined when either side has fewer than two
 * values (no variance to judge by). Runs that are exactly reproducible (both variances 0)
 * compare as exact numbers: equal means give p = 1, different ones p = 0.
 */
export function welchTest(a: readonly number[], b: readonly number[], level = 1 - alpha): Welch | undefined {
  if (a.length < 2 || b.length < 2) return undefined;
  const left = moments(a);
  const right = moments(b);
  const difference = left.mean - right.mean;
  const va = left.variance / left.n;
  const vb = right.variance / right.n;
  const standardError = Math.sqrt(va + vb);
  if (standardError === 0) {
    const exact = difference === 0 ? 1 : 0;
    return {
      difference,
      standardError: 0,
      df: Number.POSITIVE_INFINITY,
      t: difference === 0 ? 0 : Math.sign(difference) * Number.POSITIVE_INFINITY,
      p: exact,
      low: difference,
      high: difference,
    };
  }
  const df = (va + vb) ** 2 / (va ** 2 / (left.n - 1) + vb ** 2 / (right.n - 1));
  const t = difference / standardError;
  const p = Math.min(1, 2 * studentTCdf(-Math.abs(t), df));
  const half = studentTQuantile(1 - (1 - level) / 2, df) * standardError;
  return { difference, standardError, df, t, p, low: difference - half, high: difference + half };
}

/**
 * Hedges' g (Cohen's d with the small-sample correction) and its approximate interval
 * (the normal approximation of its standard error, Hedges & Olkin 1985). Undefined when
 * either side has fewer than two values or both have no spread.
 */
export function hedgesG(a: readonly number[], b: readonly number[], level = 1 - alpha): { g: number; low: number; high: number } | undefined {
  if (a.length < 2 || b.length < 2) return undefined;
  const left = moments(a);
  const right = moments(b);
  const dfPooled = left.n + right.n - 2;
  const pooled = Math.sqrt(((left.n - 1) * left.variance + (right.n - 1) * right.variance) / dfPooled);
  if (pooled === 0) return undefined;
  const correction = 1 - 3 / (4 * dfPooled - 1);
  const g = ((left.mean - right.mean) / pooled) * correction;
  const se = Math.sqrt((left.n + right.n) / (left.n * right.n) + (g * g) / (2 * (left.n + right.n)));
  const z = normalQuantile(1 - (1 - level) / 2);
  return { g, low: g - z * se, high: g + z * se };
}

/**
 * Two one-sided tests that |mean(a) − mean(b)| < margin: the larger of the two one-sided
 * p-values. Below alpha, the (1 − 2·alpha) interval of the difference lies inside
 * (−margin, margin), so the two are the same within the margin.
 */
export function equivalenceTest(a: readonly number[], b: readonly number[], margin: number): { p: number; low: number; high: number } | undefined {
  const welch = welchTest(a, b, 1 - 2 * alpha);
  return welch ? twoOneSided(welch, margin) : undefined;
}

/** TOST read off a difference's t statistic (Welch's or the paired one): the larger one-sided p. */
function twoOneSided(test: Welch, margin: number): { p: number; low: number; high: number } | undefined {
  if (!(margin > 0)) return undefined;
  if (test.standardError === 0) return { p: Math.abs(test.difference) < margin ? 0 : 1, low: test.low, high: test.high };
  const above = 1 - studentTCdf((test.difference + margin) / test.standardError, test.df);
  const below = studentTCdf((test.difference - margin) / test.standardError, test.df);
  return { p: Math.max(above, below), low: test.low, high: test.high };
}

/**
 * The paired t-test of seed-matched differences (a run of each side at the same seed,
 * differences[i] = a's score − b's at the i-th common seed): a one-sample t on the
 * differences, n − 1 degrees of freedom, in the shape of Welch's result. Valid whatever the
 * correlation between the sides at a seed (it never assumes the two independent, as Welch's
 * does); where a seed moves both alike its spread is far below Welch's, where it moves them
 * oppositely above. Undefined with fewer than two differences.
 */
export function pairedTest(differences: readonly number[], level = 1 - alpha): Welch | undefined {
  if (differences.length < 2) return undefined;
  const sample = moments(differences);
  const standardError = Math.sqrt(sample.variance / sample.n);
  if (standardError === 0) {
    const difference = sample.mean;
    return {
      difference,
      standardError: 0,
      df: Number.POSITIVE_INFINITY,
      t: difference === 0 ? 0 : Math.sign(difference) * Number.POSITIVE_INFINITY,
      p: difference === 0 ? 1 : 0,
      low: difference,
      high: difference,
    };
  }
  const df = sample.n - 1;
  const t = sample.mean / standardError;
  const p = Math.min(1, 2 * studentTCdf(-Math.abs(t), df));
  const half = studentTQuantile(1 - (1 - level) / 2, df) * standardError;
  return { difference: sample.mean, standardError, df, t, p, low: sample.mean - half, high: sample.mean + half };
}

/**
 * Welch's test of a against b whose standard error is raised to the paired one where that is
 * larger: for sides that share only two seeds, too few for a paired test read at a
 * sequential design's boundaries (its single degree of freedom makes consecutive looks far
 * less alike than the design assumes), yet matched, so a seed that moves the sides
 * oppositely would make Welch's error too small. Never more powerful than Welch; as Welch
 * when the seed moves both alike. Undefined as Welch is.
 */
export function guardedWelchTest(a: readonly number[], b: readonly number[], differences: readonly number[], level = 1 - alpha): Welch | undefined {
  const welch = welchTest(a, b, level);
  const paired = pairedTest(differences, level);
  if (!welch || !paired || !(paired.standardError > welch.standardError)) return welch;
  const standardError = paired.standardError;
  const t = welch.difference / standardError;
  const p = Math.min(1, 2 * studentTCdf(-Math.abs(t), welch.df));
  const half = studentTQuantile(1 - (1 - level) / 2, welch.df) * standardError;
  return { ...welch, standardError, t, p, low: welch.difference - half, high: welch.difference + half };
}

/** TOST read off guardedWelchTest's statistic. */
export function guardedEquivalenceTest(
  a: readonly number[],
  b: readonly number[],
  differences: readonly number[],
  margin: number,
): { p: number; low: number; high: number } | undefined {
  const guarded = guardedWelchTest(a, b, differences, 1 - 2 * alpha);
  return guarded ? twoOneSided(guarded, margin) : undefined;
}

/** TOST on seed-matched differences (pairedTest's statistic): |mean difference| < margin. */
export function pairedEquivalenceTest(differences: readonly number[], margin: number): { p: number; low: number; high: number } | undefined {
  const paired = pairedTest(differences, 1 - 2 * alpha);
  return paired ? twoOneSided(paired, margin) : undefined;
}

/**
 * Holm's step-down adjustment of a family of p-values (controls the chance of any false
 * claim at alpha without assuming the tests independent). Returns adjusted p-values in the
 * order given; an undefined p stays undefined and does not count in the family.
 */
export function holmAdjust(pValues: readonly (number | undefined)[]): (number | undefined)[] {
  const present = pValues.flatMap((p, index) => (p === undefined ? [] : [{ p, index }])).sort((left, right) => left.p - right.p || left.index - right.index);
  const adjusted: (number | undefined)[] = pValues.map(() => undefined);
  let running = 0;
  present.forEach((item, rank) => {
    running = Math.max(running, Math.min(1, (present.length - rank) * item.p));
    adjusted[item.index] = running;
  });
  return adjusted;
}

/**
 * The confidence level of an interval that agrees with its Holm-adjusted test: 1 − alpha·p/pHolm.
 * A two-sided interval at level 1 − γ excludes 0 exactly when p < γ, and p < alpha·p/pHolm
 * exactly when pHolm < alpha, so the interval shown excludes 0 if and only if the verdict
 * is "beyond seed noise". Where no earlier step of the step-down dominates, pHolm = k·p
 * and this is the level Holm's k-th step tests at (alpha/k). A comparison without a p-value
 * keeps the plain level; an exact one (p = 0) takes Bonferroni's alpha/family.
 */
export function holmIntervalLevel(p: number | undefined, pHolm: number | undefined, family: number, level = alpha): number {
  if (p === undefined || pHolm === undefined) return 1 - level;
  if (!(p > 0) || !(pHolm > 0)) return 1 - level / Math.max(1, family);
  return 1 - (level * p) / pHolm;
}

/** An interval clipped to a declared range (a reward in [0, 1] has no mean below 0). */
export function clipInterval(low: number, high: number, range: readonly [number, number] | undefined): [number, number] {
  if (!range) return [low, high];
  return [Math.min(Math.max(low, range[0]), range[1]), Math.max(Math.min(high, range[1]), range[0])];
}

/** A difference's interval clipped to what two values in the range can differ by. */
export function clipDifference(low: number, high: number, range: readonly [number, number] | undefined): [number, number] {
  if (!range) return [low, high];
  const width = range[1] - range[0];
  return clipInterval(low, high, [-width, width]);
}

/**
 * Seeds per side for a two-sided Welch test at alpha to detect a true difference `effect`
 * with the given power, when each side's standard deviation is `std`: the normal-theory
 * count, then raised until the t quantiles of its own degrees of freedom agree. At least 2.
 * `significance` is the level the test will be held to (alpha / m under Holm's first step).
 */
export function seedsToSeparate(effect: number, std: number, power = 0.8, significance = alpha): number {
  if (!(effect > 0) || !(std >= 0)) return Number.POSITIVE_INFINITY;
  if (std === 0) return 2;
  const zBeta = normalQuantile(power);
  const neededAt = (n: number): number => {
    const df = 2 * n - 2;
    return Math.max(2, Math.ceil(2 * (((studentTQuantile(1 - significance / 2, df) + studentTQuantile(power, df)) * std) / effect) ** 2));
  };
  return smallestSufficient(Math.max(2, Math.ceil(2 * (((normalQuantile(1 - significance / 2) + zBeta) * std) / effect) ** 2)), neededAt);
}

/**
 * Seeds per side for TOST to show equivalence within `margin` with the given power when
 * the true difference is `difference` (|difference| < margin), each side's standard
 * deviation `std`. Infinity when the difference is not inside the margin.
 */
export function seedsToShowEquivalence(difference: number, margin: number, std: number, power = 0.8, significance = alpha): number {
  const room = margin - Math.abs(difference);
  if (!(room > 0) || !(std >= 0)) return Number.POSITIVE_INFINITY;
  if (std === 0) return 2;
  // With the difference at 0 both sides share the type II error; otherwise the nearer bound dominates.
  const betaQuantile = Math.abs(difference) < 1e-12 ? 1 - (1 - power) / 2 : power;
  const neededAt = (n: number): number => {
    const df = 2 * n - 2;
    return Math.max(2, Math.ceil(2 * (((studentTQuantile(1 - significance, df) + studentTQuantile(betaQuantile, df)) * std) / room) ** 2));
  };
  return smallestSufficient(Math.max(2, Math.ceil(2 * (((normalQuantile(1 - significance) + normalQuantile(betaQuantile)) * std) / room) ** 2)), neededAt);
}

/**
 * The smallest count from `start` up whose own t-based requirement it meets. Stepping one at
 * a time matters at two or three seeds: jumping to the count a df of 2 asks for (its t
 * quantile is huge) would overshoot a count that already suffices at its own df. The
 * requirement falls as the count grows, so the first count that meets it is the answer.
 */
function smallestSufficient(start: number, neededAt: (n: number) => number): number {
  let n = start;
  for (let round = 0; round < 5000; round += 1) {
    const needed = neededAt(n);
    if (needed <= n) return n;
    // Far below the requirement, halve the distance (the requirement is within reach of it).
    n = needed - n > 8 ? n + Math.floor((needed - n) / 2) : n + 1;
  }
  return n;
}
