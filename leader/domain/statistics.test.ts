import { describe, expect, it } from "vitest";
import { oneSidedBound, separatedBeyondNoise, summarizeCurve, summarizeSample, withinRange } from "./statistics.ts";

describe("summarizeCurve", () => {
  it("gives final, best and the mean level under the curve", () => {
    const summary = summarizeCurve(
      [
        { step: 2, value: 0.5 },
        { step: 0, value: 0 },
        { step: 4, value: 0.4 },
        { step: 3, value: Number.NaN },
      ],
      "maximize",
    );
    // Area: (0+0.5)/2*2 + (0.5+0.4)/2*2 = 0.5 + 0.9 = 1.4 over 4 steps.
    expect(summary).toEqual({ final: 0.4, best: 0.5, bestStep: 2, normalizedArea: 0.35, points: 3 });
  });

  it("picks the lowest value when minimizing and copes with empty curves", () => {
    expect(
      summarizeCurve(
        [
          { step: 1, value: 3 },
          { step: 2, value: 1 },
        ],
        "minimize",
      ).best,
    ).toBe(1);
    expect(summarizeCurve([], "maximize").final).toBeUndefined();
  });
});

describe("summarizeSample", () => {
  it("computes mean, sample std and a t-based 95% interval", () => {
    const summary = summarizeSample([1, 2, 3]);
    expect(summary.mean).toBe(2);
    expect(summary.std).toBe(1);
    // t(0.975, 2) = 4.302653 (the t table); half width = 4.302653 / sqrt(3).
    expect(summary.low).toBeCloseTo(2 - 4.302653 / Math.sqrt(3), 5);
    expect(summary.high).toBeCloseTo(2 + 4.302653 / Math.sqrt(3), 5);
  });

  it("has no interval for one seed", () => {
    expect(summarizeSample([0.7])).toEqual({ n: 1, mean: 0.7, std: 0, low: undefined, high: undefined });
  });
});

describe("separatedBeyondNoise", () => {
  it("needs non-overlapping intervals", () => {
    const high = summarizeSample([0.9, 0.91, 0.92]);
    const low = summarizeSample([0.5, 0.52, 0.51]);
    const noisy = summarizeSample([0.2, 0.95, 0.6]);
    expect(separatedBeyondNoise(high, low, "maximize")).toBe(true);
    expect(separatedBeyondNoise(low, high, "minimize")).toBe(true);
    expect(separatedBeyondNoise(high, noisy, "maximize")).toBe(false);
    expect(separatedBeyondNoise(high, summarizeSample([0.1]), "maximize")).toBeUndefined();
  });
});

describe("withinRange and oneSidedBound", () => {
  it("clips an interval to the metric's range and gives the one-sided bound a directional claim needs", () => {
    const sample = summarizeSample([0.28, 0.34]);
    expect(withinRange(summarizeSample([0.1, 0.95]), [0, 1])).toMatchObject({ low: 0, high: 1 });
    // Both seeds at 0.28-0.34 against chance 0.03: the two-sided interval reaches below it,
    // the one-sided bound (t(0.95, 1) = 6.314) does not.
    expect(sample.low!).toBeLessThan(0.03);
    // sd 0.0424, standard error 0.03.
    expect(oneSidedBound(sample, "maximize")!).toBeCloseTo(0.31 - 6.3138 * 0.03, 3);
    expect(oneSidedBound(sample, "maximize")!).toBeGreaterThan(0.03);
    expect(oneSidedBound(summarizeSample([1]), "maximize")).toBeUndefined();
  });
});
