import { describe, expect, it } from "vitest";
import {
  clipDifference,
  clipInterval,
  equivalenceTest,
  hedgesG,
  holmAdjust,
  pairedEquivalenceTest,
  pairedTest,
  seedsToSeparate,
  seedsToShowEquivalence,
  welchTest,
} from "./comparisons.ts";
import { normalQuantile, studentTCdf } from "./student-t.ts";

// R's `sleep` data set (Student 1908): extra hours of sleep under two drugs, 10 patients each.
const drug1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
const drug2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

describe("Welch's t-test", () => {
  it("reproduces R's t.test(extra ~ group, data = sleep)", () => {
    // R: t = -1.8608, df = 17.776, p-value = 0.07939; 95 percent confidence interval: -3.3654832 0.2054832
    const welch = welchTest(drug1, drug2)!;
    expect(welch.difference).toBeCloseTo(-1.58, 10);
    expect(welch.t).toBeCloseTo(-1.8608, 4);
    expect(welch.df).toBeCloseTo(17.776, 3);
    expect(welch.p).toBeCloseTo(0.07939, 5);
    expect(welch.low).toBeCloseTo(-3.3654832, 6);
    expect(welch.high).toBeCloseTo(0.2054832, 6);
  });

  it("needs two values a side, and treats exactly reproducible runs as exact", () => {
    expect(welchTest([1], [1, 2])).toBeUndefined();
    expect(welchTest([0.5, 0.5], [0.5, 0.5])).toMatchObject({ p: 1, difference: 0 });
    expect(welchTest([0.6, 0.6], [0.5, 0.5])).toMatchObject({ p: 0 });
  });

  it("separates two seeds a side when the gap is many times the spread (the demo's screen)", () => {
    // lr 0.5 against the baseline in the demo's first stage.
    const welch = welchTest([0.471, 0.4786], [0.2828, 0.2565])!;
    expect(welch.p).toBeLessThan(0.05);
    expect(welch.df).toBeGreaterThan(1);
    expect(welch.df).toBeLessThan(2);
  });
});

describe("the paired t-test (seed-matched differences)", () => {
  it("reproduces R's t.test(drug1, drug2, paired = TRUE) on the sleep data", () => {
    // R: t = -4.0621, df = 9, p-value = 0.002833; 95 percent confidence interval: -2.4598858 -0.7001142
    const paired = pairedTest(drug1.map((value, index) => value - drug2[index]!))!;
    expect(paired.difference).toBeCloseTo(-1.58, 10);
    expect(paired.t).toBeCloseTo(-4.0621, 4);
    expect(paired.df).toBe(9);
    expect(paired.p).toBeCloseTo(0.002833, 6);
    expect(paired.low).toBeCloseTo(-2.4598858, 6);
    expect(paired.high).toBeCloseTo(-0.7001142, 6);
  });

  it("needs two differences, and shows a tie within the margin where Welch cannot", () => {
    expect(pairedTest([0.1])).toBeUndefined();
    // Each seed moves both sides alike: the sides spread widely, their differences hardly.
    const a = [0.2, 0.5, 0.8, 0.35];
    const b = [0.21, 0.49, 0.82, 0.34];
    expect(
      pairedEquivalenceTest(
        a.map((value, index) => value - b[index]!),
        0.05,
      )!.p,
    ).toBeLessThan(0.05);
    expect(equivalenceTest(a, b, 0.05)!.p).toBeGreaterThan(0.05);
  });
});

describe("effect sizes", () => {
  it("gives Hedges' g with its small-sample correction and an approximate interval", () => {
    // Pooled sd of the sleep groups is sqrt((3.2006 + 4.0090) / 2) = 1.8986; d = -1.58 / 1.8986 = -0.8322; J = 1 - 3/71.
    const effect = hedgesG(drug1, drug2)!;
    expect(effect.g).toBeCloseTo(-0.8322 * (1 - 3 / 71), 3);
    const se = Math.sqrt(20 / 100 + effect.g ** 2 / 40);
    expect(effect.high - effect.low).toBeCloseTo(2 * normalQuantile(0.975) * se, 6);
    expect(hedgesG([1, 1], [1, 1])).toBeUndefined();
  });
});

describe("two one-sided tests", () => {
  it("is the larger one-sided p, and below 0.05 exactly when the 90% interval lies inside the margin", () => {
    const welch = welchTest(drug1, drug2, 0.9)!;
    const result = equivalenceTest(drug1, drug2, 2)!;
    const above = 1 - studentTCdf((welch.difference + 2) / welch.standardError, welch.df);
    const below = studentTCdf((welch.difference - 2) / welch.standardError, welch.df);
    expect(result.p).toBeCloseTo(Math.max(above, below), 12);
    expect(result.low).toBeCloseTo(welch.low, 12);
    // The 90% interval [-3.05, -0.11] reaches past -2: not equivalent within 2; within 3.1 it is.
    expect(result.p).toBeGreaterThan(0.05);
    const wide = equivalenceTest(drug1, drug2, 3.1)!;
    expect(wide.high < 3.1 && wide.low > -3.1).toBe(true);
    expect(wide.p).toBeLessThan(0.05);
    expect(equivalenceTest(drug1, drug2, 0)).toBeUndefined();
  });

  it("shows two tight samples the same within 0.02", () => {
    expect(equivalenceTest([0.601, 0.6, 0.602, 0.599], [0.598, 0.6, 0.601, 0.597], 0.02)!.p).toBeLessThan(0.05);
    expect(equivalenceTest([0.601, 0.6], [0.65, 0.66], 0.02)!.p).toBeGreaterThan(0.05);
  });
});

describe("Holm's correction", () => {
  it("matches R's p.adjust(p, 'holm')", () => {
    // p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
    const adjusted = holmAdjust([0.01, 0.04, 0.03, 0.005]);
    [0.03, 0.06, 0.06, 0.02].forEach((value, index) => expect(adjusted[index]).toBeCloseTo(value, 12));
    expect(holmAdjust([0.5, undefined, 0.9])).toEqual([1, undefined, 1]); // the step-down keeps adjusted p-values monotone
    expect(holmAdjust([])).toEqual([]);
  });
});

describe("intervals inside the metric's range", () => {
  it("clips a mean's interval to the range and a difference's to its width", () => {
    expect(clipInterval(-0.35, 1.48, [0, 1])).toEqual([0, 1]);
    expect(clipInterval(0.2, 0.4, [0, 1])).toEqual([0.2, 0.4]);
    expect(clipInterval(-0.35, 1.48, undefined)).toEqual([-0.35, 1.48]);
    expect(clipDifference(-1.5, 0.3, [0, 1])).toEqual([-1, 0.3]);
  });
});

describe("seeds a follow-up needs", () => {
  it("matches the textbook sample size for a two-sample test (and grows with the t correction)", () => {
    // Normal theory: n = 2 (z_.975 + z_.8)^2 (sd / d)^2 = 15.7 for d = sd (Cohen: 16 per group; 17 with t).
    expect(seedsToSeparate(1, 1)).toBe(17);
    expect(seedsToSeparate(0.5, 1)).toBeGreaterThanOrEqual(63);
    expect(seedsToSeparate(0.5, 0.05)).toBe(2);
    expect(seedsToSeparate(0, 1)).toBe(Number.POSITIVE_INFINITY);
  });

  it("sizes an equivalence test from the room between the difference and the margin", () => {
    const near = seedsToShowEquivalence(0, 0.02, 0.01);
    const far = seedsToShowEquivalence(0.015, 0.02, 0.01);
    expect(near).toBeGreaterThanOrEqual(2);
    expect(far).toBeGreaterThan(near);
    expect(seedsToShowEquivalence(0.03, 0.02, 0.01)).toBe(Number.POSITIVE_INFINITY);
  });
});
