/**
 * Student's t and the normal distribution: the CDFs and quantiles the leader's small-sample
 * tests need (Welch's t has a fractional degrees of freedom, so a table will not do).
 *
 * Written here rather than taken from a package because the repository adds no runtime
 * dependency for four functions; the values are tested against published tables and R
 * output (student-t.test.ts). Every loop has a fixed bound, so each call is constant time.
 */

/** ln Γ(x) for x > 0, Lanczos' approximation (g = 7, nine terms; relative error < 1e-13). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const coefficients = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012,
    9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  const z = x - 1;
  let sum = coefficients[0]!;
  for (let index = 1; index < coefficients.length; index += 1) sum += coefficients[index]! / (z + index);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/**
 * The continued fraction of the incomplete beta function, evaluated from the front with
 * Lentz's method; converges fast for x < (a + 1) / (a + b + 2).
 */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  const clampTiny = (value: number): number => (Math.abs(value) < tiny ? tiny : value);
  let c = 1;
  let d = 1 / clampTiny(1 - ((a + b) * x) / (a + 1));
  let fraction = d;
  for (let m = 1; m <= 400; m += 1) {
    const even = (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / clampTiny(1 + even * d);
    c = clampTiny(1 + even / c);
    fraction *= d * c;
    const odd = (-(a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / clampTiny(1 + odd * d);
    c = clampTiny(1 + odd / c);
    const change = d * c;
    fraction *= change;
    if (Math.abs(change - 1) < 1e-15) break;
  }
  return fraction;
}

/** The regularized incomplete beta function I_x(a, b). */
export function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (!(x > 0)) return 0;
  if (!(x < 1)) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The fraction converges on one side of the mean of Beta(a, b); the symmetry
  // I_x(a, b) = 1 − I_{1−x}(b, a) covers the other.
  if (x < (a + 1) / (a + b + 2)) return (front * betaContinuedFraction(a, b, x)) / a;
  return 1 - (front * betaContinuedFraction(b, a, 1 - x)) / b;
}

/** P(Z ≤ z) for a standard normal Z (from erfc, relative error below 1e-7). */
export function normalCdf(z: number): number {
  return 0.5 * erfc(-z / Math.SQRT2);
}

/** Complementary error function (Numerical-Recipes-style Chebyshev fit, |error| < 1.2e-7). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const polynomial =
    -z * z -
    1.26551223 +
    t *
      (1.00002368 +
        t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const value = t * Math.exp(polynomial);
  return x >= 0 ? value : 2 - value;
}

/** Degrees of freedom past which Student's t is the normal distribution to the precision used here. */
const normalFromDf = 1e5;

/** P(T ≤ t) for Student's t with `df` > 0 degrees of freedom (fractional allowed). */
export function studentTCdf(t: number, df: number): number {
  if (!(df > 0)) throw new RangeError(`degrees of freedom must be positive, got ${df}`);
  if (Number.isNaN(t)) return Number.NaN;
  if (t === Number.POSITIVE_INFINITY) return 1;
  if (t === Number.NEGATIVE_INFINITY) return 0;
  if (df >= normalFromDf) return normalCdf(t);
  const tail = 0.5 * regularizedIncompleteBeta(df / (df + t * t), df / 2, 0.5);
  return t > 0 ? 1 - tail : tail;
}

/**
 * The p-quantile of a continuous, increasing CDF by bisection: bracket by doubling, then
 * halve a fixed number of times (about 1e-12 on the scale of the bracket).
 */
function invert(cdf: (value: number) => number, p: number): number {
  if (!(p > 0 && p < 1)) {
    if (p === 0) return Number.NEGATIVE_INFINITY;
    if (p === 1) return Number.POSITIVE_INFINITY;
    throw new RangeError(`a probability must lie in [0, 1], got ${p}`);
  }
  let low = -1;
  let high = 1;
  for (let index = 0; index < 80 && cdf(low) > p; index += 1) low *= 2;
  for (let index = 0; index < 80 && cdf(high) < p; index += 1) high *= 2;
  for (let index = 0; index < 120; index += 1) {
    const middle = (low + high) / 2;
    if (cdf(middle) < p) low = middle;
    else high = middle;
    if (high - low <= 1e-13 * Math.max(1, Math.abs(middle))) break;
  }
  return (low + high) / 2;
}

/** The p-quantile of Student's t with `df` degrees of freedom. */
export function studentTQuantile(p: number, df: number): number {
  if (!(df > 0)) throw new RangeError(`degrees of freedom must be positive, got ${df}`);
  return invert((value) => studentTCdf(value, df), p);
}

/** The p-quantile of the standard normal distribution. */
export function normalQuantile(p: number): number {
  return invert(normalCdf, p);
}
