import type { MetricsRecord } from "../../campaign/index.ts";
import type { BudgetAxis } from "../domain/budget-axis.ts";
import type { CurvePoint } from "../domain/statistics.ts";

/**
 * Compute-fair comparisons. A score per optimizer step is unfair between configurations
 * that consume different amounts per step (`num_repeat`, batch size, C1 vs C3): one may
 * have seen twenty times the rollouts of the other at the same step. So a curve can be put
 * on the axis of what was spent (episodes, trained tokens, wall seconds, GPU-hours), and
 * the runs of a stage compared at the budget all of them reached.
 *
 * The per-step amounts come from the run's metrics records: `episodes` and `tokens` (a
 * swarm server's step metrics), `step_time_s` for wall time (else the records' times).
 */
export { axisUnits, budgetAxes, defaultBudgetAxis, type BudgetAxis } from "../domain/budget-axis.ts";

/** How much one record's step consumed on the axis; undefined when the run does not say. */
function spentIn(record: MetricsRecord, previous: MetricsRecord | undefined, axis: BudgetAxis, gpus: number): number | undefined {
  if (axis === "steps") return record.step - (previous?.step ?? 0);
  if (axis === "episodes" || axis === "tokens") {
    const value = record[axis];
    return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
  }
  const stepSeconds = record.step_time_s;
  const seconds =
    typeof stepSeconds === "number" && Number.isFinite(stepSeconds)
      ? stepSeconds
      : previous === undefined
        ? undefined
        : (Date.parse(record.time) - Date.parse(previous.time)) / 1000;
  if (seconds === undefined || !(seconds >= 0)) return undefined;
  return axis === "wall" ? seconds : (seconds * Math.max(gpus, 0)) / 3600;
}

/**
 * The metric's curve with x = cumulative consumption on the axis (the `step` field of the
 * points carries it); undefined when some step does not say what it consumed.
 */
export function curveOnAxis(records: readonly MetricsRecord[], metric: string, axis: BudgetAxis, gpus = 1): CurvePoint[] | undefined {
  const spent = cumulativeSpend(records, axis, gpus);
  if (spent === undefined) return undefined;
  return spent.flatMap(({ record, total }) => {
    const value = record[metric];
    return typeof value === "number" && Number.isFinite(value) ? [{ step: total, value }] : [];
  });
}

/** Each record (by step) with the total spent on the axis up to it; undefined when a step does not say. */
function cumulativeSpend(records: readonly MetricsRecord[], axis: BudgetAxis, gpus: number): { record: MetricsRecord; total: number }[] | undefined {
  const sorted = [...records].sort((left, right) => left.step - right.step);
  const spent: { record: MetricsRecord; total: number }[] = [];
  let total = 0;
  for (const [index, record] of sorted.entries()) {
    const amount = spentIn(record, sorted[index - 1], axis, gpus);
    if (amount === undefined) {
      // The first record of a run timed by its records' clock has nothing before it.
      if (index === 0 && (axis === "wall" || axis === "gpu_hours")) continue;
      return undefined;
    }
    total += amount;
    spent.push({ record, total });
  }
  return spent;
}

/** The curve up to `budget`, its last point interpolated at exactly `budget`. */
export function truncateAt(curve: readonly CurvePoint[], budget: number): CurvePoint[] {
  const kept = curve.filter((point) => point.step <= budget);
  const after = curve.find((point) => point.step > budget);
  const last = kept.at(-1);
  if (after && last && last.step < budget) {
    const share = (budget - last.step) / (after.step - last.step);
    kept.push({ step: budget, value: last.value + share * (after.value - last.value) });
  }
  return kept;
}

/** The budget every curve reached (the smallest last x), so all are compared at equal spend. */
export function commonBudget(curves: readonly (readonly CurvePoint[])[]): number | undefined {
  const ends = curves.filter((curve) => curve.length > 0).map((curve) => curve.at(-1)!.step);
  return ends.length === 0 ? undefined : Math.min(...ends);
}

/** Mean consumption per optimizer step on the axis; undefined when the run does not say. */
export function perStep(records: readonly MetricsRecord[], axis: Exclude<BudgetAxis, "steps">, gpus = 1): number | undefined {
  const spent = cumulativeSpend(records, axis, gpus);
  const last = records.reduce((max, record) => Math.max(max, record.step), 0);
  if (spent === undefined || last === 0) return undefined;
  return (spent.at(-1)?.total ?? 0) / last;
}

/**
 * Whether comparing per step is confounded: configurations consume more than 10% more
 * episodes per step than one another. Returns the spread, for the report's warning.
 */
export function stepConfound(
  perConfiguration: ReadonlyMap<string, number>,
): { confounded: boolean; lowest: [string, number]; highest: [string, number] } | undefined {
  const entries = [...perConfiguration].filter(([, value]) => Number.isFinite(value) && value > 0);
  if (entries.length < 2) return undefined;
  const sorted = entries.sort((left, right) => left[1] - right[1]);
  const lowest = sorted[0]!;
  const highest = sorted.at(-1)!;
  return { confounded: highest[1] > lowest[1] * 1.1, lowest, highest };
}
