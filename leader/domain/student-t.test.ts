import { describe, expect, it } from "vitest";
import { logGamma, normalCdf, normalQuantile, regularizedIncompleteBeta, studentTCdf, studentTQuantile } from "./student-t.ts";

/**
 * Published values: two-sided t table quantiles (any statistics textbook's Table of
 * Student's t; R's qt gives the same to the digits shown), R's pt, and the normal table.
 */
describe("Student's t", () => {
  it("matches the t table's quantiles", () => {
    const table: [number, number, number][] = [
      // [p, df, quantile]
      [0.975, 1, 12.7062],
      [0.975, 2, 4.3027],
      [0.975, 3, 3.1824],
      [0.975, 5, 2.5706],
      [0.975, 10, 2.2281],
      [0.975, 30, 2.0423],
      [0.95, 1, 6.3138],
      [0.95, 5, 2.015],
      [0.995, 20, 2.8453],
      [0.9, 4, 1.5332],
    ];
    for (const [p, df, quantile] of table) expect(studentTQuantile(p, df)).toBeCloseTo(quantile, 3);
    // Symmetric, and the normal's for very many degrees of freedom.
    expect(studentTQuantile(0.025, 7)).toBeCloseTo(-studentTQuantile(0.975, 7), 10);
    expect(studentTQuantile(0.975, 1e6)).toBeCloseTo(1.96, 2);
  });

  it("matches R's pt, including fractional degrees of freedom", () => {
    expect(studentTCdf(1, 1)).toBeCloseTo(0.75, 12); // the Cauchy distribution: 1/2 + atan(1)/pi
    expect(studentTCdf(2, 5)).toBeCloseTo(0.9490303, 6); // pt(2, 5)
    expect(studentTCdf(-1, 3)).toBeCloseTo(0.1955011, 6); // pt(-1, 3)
    expect(studentTCdf(0, 2.5)).toBeCloseTo(0.5, 12);
    // df = 2 has a closed form: 1/2 + t / (2 sqrt(t^2 + 2)).
    for (const t of [-3, -0.5, 0.7, 4]) expect(studentTCdf(t, 2)).toBeCloseTo(0.5 + t / (2 * Math.sqrt(t * t + 2)), 10);
    expect(studentTCdf(Number.POSITIVE_INFINITY, 3)).toBe(1);
    expect(() => studentTCdf(1, 0)).toThrow(/degrees of freedom/);
  });

  it("inverts its own CDF", () => {
    for (const df of [1, 1.7, 4, 17.776, 120]) for (const p of [0.01, 0.3, 0.9, 0.999]) expect(studentTCdf(studentTQuantile(p, df), df)).toBeCloseTo(p, 9);
  });
});

describe("the pieces", () => {
  it("logGamma matches factorials and Γ(1/2) = √π", () => {
    expect(logGamma(5)).toBeCloseTo(Math.log(24), 12);
    expect(logGamma(0.5)).toBeCloseTo(Math.log(Math.sqrt(Math.PI)), 12);
    expect(logGamma(101)).toBeCloseTo(363.73937555556347, 8); // ln(100!)
  });

  it("the regularized incomplete beta has its closed forms", () => {
    // I_x(a, 1) = x^a and I_x(1, b) = 1 − (1 − x)^b.
    expect(regularizedIncompleteBeta(0.3, 2.5, 1)).toBeCloseTo(0.3 ** 2.5, 12);
    expect(regularizedIncompleteBeta(0.8, 1, 3)).toBeCloseTo(1 - 0.2 ** 3, 12);
    expect(regularizedIncompleteBeta(0, 2, 2)).toBe(0);
    expect(regularizedIncompleteBeta(1, 2, 2)).toBe(1);
  });

  it("the normal distribution matches its table", () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.8)).toBeCloseTo(0.841621, 5);
    expect(normalQuantile(0.95)).toBeCloseTo(1.644854, 5);
    expect(normalCdf(1)).toBeCloseTo(0.841345, 6);
    expect(normalCdf(-2)).toBeCloseTo(0.02275, 5);
  });
});
