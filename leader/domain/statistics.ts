/**
 * The numbers the leader reasons with, computed in code so that no figure in a plan, an
 * analysis or a report comes from a language model's arithmetic.
 */
export interface CurvePoint {
  step: number;
  value: number;
}

export interface CurveSummary {
  final: number | undefined;
  best: number | undefined;
  bestStep: number | undefined;
  /** Trapezoidal area under the curve divided by the step span: the mean level over training. */
  normalizedArea: number | undefined;
  points: number;
}

export function summarizeCurve(points: CurvePoint[], goal: "maximize" | "minimize"): CurveSummary {
  const finite = points.filter((point) => Number.isFinite(point.value)).sort((left, right) => left.step - right.step);
  if (finite.length === 0) return { final: undefined, best: undefined, bestStep: undefined, normalizedArea: undefined, points: 0 };
  let best = finite[0]!;
  for (const point of finite) {
    if (goal === "maximize" ? point.value > best.value : point.value < best.value) best = point;
  }
  let area = 0;
  for (let index = 1; index < finite.length; index += 1) {
    const left = finite[index - 1]!;
    const right = finite[index]!;
    area += ((left.value + right.value) / 2) * (right.step - left.step);
  }
  const span = finite[finite.length - 1]!.step - finite[0]!.step;
  return {
    final: finite[finite.length - 1]!.value,
    best: best.value,
    bestStep: best.step,
    normalizedArea: span > 0 ? area / span : finite[0]!.value,
    points: finite.length,
  };
}

import { clipInterval } from "./comparisons.ts";
import { studentTQuantile } from "./student-t.ts";

export interface SampleSummary {
  n: number;
  mean: number;
  /** Sample standard deviation (n − 1); 0 for a single value. */
  std: number;
  /** 95% confidence interval of the mean (t distribution); undefined bounds for n < 2. */
  low: number | undefined;
  high: number | undefined;
}

export function summarizeSample(values: number[]): SampleSummary {
  const finite = values.filter(Number.isFinite);
  const n = finite.length;
  if (n === 0) return { n: 0, mean: Number.NaN, std: Number.NaN, low: undefined, high: undefined };
  const mean = finite.reduce((sum, value) => sum + value, 0) / n;
  if (n === 1) return { n, mean, std: 0, low: undefined, high: undefined };
  const variance = finite.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (n - 1);
  const std = Math.sqrt(variance);
  const half = (studentTQuantile(0.975, n - 1) * std) / Math.sqrt(n);
  return { n, mean, std, low: mean - half, high: mean + half };
}

/** The sample with its interval clipped to the metric's declared range (a rate has no mean below 0). */
export function withinRange(sample: SampleSummary, range: readonly [number, number] | undefined): SampleSummary {
  if (!range || sample.low === undefined || sample.high === undefined) return sample;
  const [low, high] = clipInterval(sample.low, sample.high, range);
  return { ...sample, low, high };
}

/**
 * The one-sided 95% bound of the mean on the side that matters for `goal` (the lower bound
 * when maximizing): a directional prediction ("above chance") is a one-sided claim.
 * Undefined for fewer than two values.
 */
export function oneSidedBound(sample: SampleSummary, goal: "maximize" | "minimize"): number | undefined {
  if (sample.n < 2) return undefined;
  const half = (studentTQuantile(0.95, sample.n - 1) * sample.std) / Math.sqrt(sample.n);
  return goal === "maximize" ? sample.mean - half : sample.mean + half;
}

/**
 * Whether `a` is better than `b` beyond seed noise: their 95% intervals do not overlap (a
 * conservative test that needs no distributional assumption beyond the intervals').
 * Undefined when either has fewer than two seeds.
 */
export function separatedBeyondNoise(a: SampleSummary, b: SampleSummary, goal: "maximize" | "minimize"): boolean | undefined {
  if (a.low === undefined || a.high === undefined || b.low === undefined || b.high === undefined) return undefined;
  return goal === "maximize" ? a.low > b.high : a.high < b.low;
}
