/**
 * Reads a blueprint's prediction when it is a simple comparison and judges it against the
 * recorded metrics. Understood forms (case-insensitive, anything after the number ignored):
 *
 * - `reward_mean at the last step >= 0.60 (baseline ~0.45)`   last recorded value
 * - `final reward_mean > 0.5`, `reward_mean >= 0.6`            last value too
 * - `best reward_mean >= 0.6`, `reward_mean at best >= 0.6`    best value (max, or min for
 *   a metric whose goal is minimize)
 * - `mean reward_mean ...`                                     mean over all steps
 *
 * Anything else is "inconclusive" with the reason, never a guess. Pure.
 */
export type Comparator = ">=" | "<=" | ">" | "<" | "==";
export type Aggregate = "last" | "best" | "mean";

export interface ParsedPrediction {
  metric: string;
  aggregate: Aggregate;
  comparator: Comparator;
  threshold: number;
}

export interface Verdict {
  verdict: "supported" | "refuted" | "inconclusive";
  /** One sentence with the numbers. */
  explanation: string;
  observed?: number;
}

const number = String.raw`[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?`;
const metricName = String.raw`[A-Za-z_][\w/.@-]*`;
const aggregateWords: Record<string, Aggregate> = { last: "last", final: "last", best: "best", max: "best", min: "best", mean: "mean", average: "mean" };

const forms: RegExp[] = [
  new RegExp(
    String.raw`^\s*(?<aggregate>final|last|best|max|min|mean|average)\s+(?<metric>${metricName})\s*(?<comparator>>=|<=|==|=|>|<|≥|≤)\s*(?<threshold>${number})`,
    "i",
  ),
  new RegExp(
    String.raw`^\s*(?<metric>${metricName})\s+at\s+(?:the\s+)?(?<aggregate>last|final|best)(?:\s+step)?\s*(?<comparator>>=|<=|==|=|>|<|≥|≤)\s*(?<threshold>${number})`,
    "i",
  ),
  new RegExp(String.raw`^\s*(?<metric>${metricName})\s*(?<comparator>>=|<=|==|=|>|<|≥|≤)\s*(?<threshold>${number})`, "i"),
];

function normalizeComparator(text: string): Comparator {
  if (text === "≥") return ">=";
  if (text === "≤") return "<=";
  if (text === "=") return "==";
  return text as Comparator;
}

export function parsePrediction(text: string): ParsedPrediction | undefined {
  for (const form of forms) {
    const groups = form.exec(text)?.groups;
    if (!groups?.metric || !groups.comparator || groups.threshold === undefined) continue;
    const aggregate = groups.aggregate ? (aggregateWords[groups.aggregate.toLowerCase()] ?? "last") : "last";
    return { metric: groups.metric, aggregate, comparator: normalizeComparator(groups.comparator), threshold: Number(groups.threshold) };
  }
  return undefined;
}

function holds(value: number, comparator: Comparator, threshold: number): boolean {
  switch (comparator) {
    case ">=":
      return value >= threshold;
    case "<=":
      return value <= threshold;
    case ">":
      return value > threshold;
    case "<":
      return value < threshold;
    case "==":
      return Math.abs(value - threshold) <= 1e-9 * Math.max(1, Math.abs(threshold));
  }
}

export interface MetricSeriesPoint {
  step: number;
  value: number;
}

export function aggregateSeries(
  series: MetricSeriesPoint[],
  aggregate: Aggregate,
  goal: "maximize" | "minimize" = "maximize",
): { value: number; step?: number } | undefined {
  const finite = series.filter((point) => Number.isFinite(point.value));
  if (finite.length === 0) return undefined;
  if (aggregate === "last") {
    const last = finite[finite.length - 1]!;
    return { value: last.value, step: last.step };
  }
  if (aggregate === "mean") return { value: finite.reduce((sum, point) => sum + point.value, 0) / finite.length };
  const best = finite.reduce((chosen, point) => ((goal === "maximize" ? point.value > chosen.value : point.value < chosen.value) ? point : chosen));
  return { value: best.value, step: best.step };
}

const format = (value: number): string =>
  Math.abs(value) >= 1e4 || (Math.abs(value) < 1e-3 && value !== 0) ? value.toExponential(3) : String(Number(value.toPrecision(4)));

/**
 * Judges a prediction. A run that did not finish can still refute or support it, but a
 * run with no value of the metric is inconclusive.
 */
export function judgePrediction(
  prediction: string | undefined,
  seriesOf: (metric: string) => MetricSeriesPoint[],
  options: { goal?: "maximize" | "minimize"; finished?: boolean } = {},
): Verdict {
  if (!prediction) return { verdict: "inconclusive", explanation: "the blueprint states no prediction" };
  const parsed = parsePrediction(prediction);
  if (!parsed)
    return {
      verdict: "inconclusive",
      explanation: `the prediction "${prediction}" is not a simple comparison such as "reward_mean at the last step >= 0.60", so the worker does not judge it`,
    };
  const observed = aggregateSeries(seriesOf(parsed.metric), parsed.aggregate, options.goal);
  if (!observed) return { verdict: "inconclusive", explanation: `no finite value of ${parsed.metric} was recorded` };
  const where = observed.step === undefined ? `(${parsed.aggregate} over all steps)` : `(${parsed.aggregate}, step ${observed.step})`;
  const comparison = `${parsed.metric} = ${format(observed.value)} ${where} vs predicted ${parsed.comparator} ${format(parsed.threshold)}`;
  const ok = holds(observed.value, parsed.comparator, parsed.threshold);
  if (options.finished === false && parsed.aggregate === "last") {
    // The last value of an unfinished run is not the final one: only say what it showed.
    return {
      verdict: "inconclusive",
      observed: observed.value,
      explanation: `${comparison}; the run did not finish, so its last value is not final (it ${ok ? "met" : "did not meet"} the threshold when it stopped)`,
    };
  }
  return { verdict: ok ? "supported" : "refuted", observed: observed.value, explanation: `${comparison}: ${ok ? "holds" : "does not hold"}` };
}
