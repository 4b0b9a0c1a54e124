import { z } from "zod";

/**
 * Early stopping of hopeless runs (successive halving, ASHA-style), opt-in per topic:
 *
 * ```yaml
 * early_stop: { rungs: [0.25, 0.5], keep: 0.5 }   # rungs: fractions of each run's max_steps
 * ```
 *
 * At each rung (step ceil(fraction x max_steps) of a run) every run that reached it has a
 * partial score: the mean of the metric's last `window` values (default 3) at or before
 * that step. A rung is decided once no live run is still short of it (a run waiting for a
 * slot is not live yet; it is judged when it gets there, against everyone's score at the
 * same rung). Configurations are ranked by their mean partial score; those outside the
 * top max(2, ceil(keep x n)) whose mean is worse than the best's by more than the topic's
 * `metric.equivalence` (0 when none) have their live runs stopped. Two are always kept:
 * the stage ends in a comparison of the leader with a runner-up, and halving down to a
 * single survivor would leave nothing to compare it with (a stage of two is never cut). The decision is a pure
 * function of the recorded metrics, so a leader re-run after a crash reaches the same
 * stops; a stop already requested stays (`stoppedAtRung`).
 *
 * Left out: promoting runs (a stage's runs are all launched anyway), and runs of other
 * stages (a rung compares the stage's own runs).
 */
export const earlyStopSchema = z.strictObject({
  rungs: z
    .array(z.number().gt(0, "a rung is a fraction of max_steps above 0").lt(1, "a rung is a fraction of max_steps below 1"))
    .min(1)
    .max(10)
    .refine((rungs) => rungs.every((rung, index) => index === 0 || rung > rungs[index - 1]!), "rungs must be strictly ascending, e.g. [0.25, 0.5]"),
  keep: z.number().gt(0, "keep is the share of configurations kept at a rung, above 0").lt(1, "keep is a share below 1, e.g. 0.5"),
  /** How many of the metric's last values at a rung make its partial score. */
  window: z.int().min(1).max(100).default(3),
});

export type EarlyStopRule = z.infer<typeof earlyStopSchema>;

export const earlyStopHint =
  "early_stop: { rungs: [0.25, 0.5], keep: 0.5 } (rungs: ascending fractions of max_steps strictly between 0 and 1; keep: a share in (0, 1))";

export interface EarlyStopRun {
  blueprintId: string;
  configurationId: string;
  /** Started and not finished: a run that can still reach a rung, and can be stopped. */
  live: boolean;
  /** The run's max_steps: rung k is at step ceil(rungs[k] x maxSteps). */
  maxSteps: number;
  /** The last step it recorded, or null. */
  lastStep: number | null;
  /** The topic metric's finite values, by step. */
  points: readonly { step: number; value: number }[];
  /** The rung (1-based) a stop was requested at before, when one was. */
  stoppedAtRung?: number;
}

export interface RungStanding {
  configurationId: string;
  /** Mean partial score over the configuration's runs that reached the rung. */
  mean: number;
  runs: number;
}

export interface EarlyStop {
  blueprintId: string;
  configurationId: string;
  /** 1-based rung index, its fraction and the run's step for it. */
  rung: number;
  fraction: number;
  rungStep: number;
  /** The run's last recorded step when the stop was decided. */
  step: number | null;
  /** Its configuration's mean partial score at the rung, and the best's. */
  score: number;
  best: number;
  bestConfiguration: string;
  margin: number;
  rule: string;
  /** All of it in one sentence (the worker's reason, the report's line). */
  reason: string;
}

export interface RungDecision {
  rung: number;
  fraction: number;
  ranking: RungStanding[];
  kept: string[];
  cut: string[];
}

export interface EarlyStopOutcome {
  /** Rungs that could be decided now, in order. */
  rungs: RungDecision[];
  /** Live runs to stop now (never one already asked). */
  stops: EarlyStop[];
}

/** Four significant digits (configurations.ts has the same; importing it would close a cycle through topic.ts). */
function formatNumber(value: number): string {
  return String(Number(value.toPrecision(4)));
}

/** Configurations a rung always keeps (the leader and a runner-up to compare it with). */
export const minimumKept = 2;

export function rungStep(fraction: number, maxSteps: number): number {
  return Math.max(1, Math.ceil(fraction * maxSteps));
}

/** Mean of the last `window` values at or before `step`; undefined when there is none. */
export function partialScore(points: readonly { step: number; value: number }[], step: number, window: number): number | undefined {
  const upTo = points.filter((point) => point.step <= step && Number.isFinite(point.value)).sort((a, b) => a.step - b.step);
  const recent = upTo.slice(-window);
  if (recent.length === 0) return undefined;
  return recent.reduce((sum, point) => sum + point.value, 0) / recent.length;
}

export function decideEarlyStops(
  runs: readonly EarlyStopRun[],
  rule: EarlyStopRule,
  metric: { name: string; goal: "maximize" | "minimize"; equivalence?: number | undefined },
): EarlyStopOutcome {
  const margin = metric.equivalence ?? 0;
  const worseBy = (mean: number, best: number) => (metric.goal === "maximize" ? best - mean : mean - best);
  const stoppedAt = new Map<string, number>();
  for (const run of runs) if (run.stoppedAtRung !== undefined) stoppedAt.set(run.blueprintId, run.stoppedAtRung);
  const decisions: RungDecision[] = [];
  const stops: EarlyStop[] = [];
  for (const [index, fraction] of rule.rungs.entries()) {
    const rung = index + 1;
    // Runs stopped at an earlier rung are out of this one, whatever they recorded after.
    const inPlay = runs.filter((run) => (stoppedAt.get(run.blueprintId) ?? Number.POSITIVE_INFINITY) >= rung);
    const reached = (run: EarlyStopRun) => run.lastStep !== null && run.lastStep >= rungStep(fraction, run.maxSteps);
    if (inPlay.some((run) => run.live && !stoppedAt.has(run.blueprintId) && !reached(run))) break;
    const byConfiguration = new Map<string, number[]>();
    for (const run of inPlay) {
      if (!reached(run)) continue;
      const score = partialScore(run.points, rungStep(fraction, run.maxSteps), rule.window);
      if (score === undefined) continue;
      byConfiguration.set(run.configurationId, [...(byConfiguration.get(run.configurationId) ?? []), score]);
    }
    const ranking: RungStanding[] = [...byConfiguration.entries()]
      .map(([configurationId, scores]) => ({ configurationId, mean: scores.reduce((sum, value) => sum + value, 0) / scores.length, runs: scores.length }))
      // Best first; ties keep the first-seen order (stable sort).
      .sort((a, b) => (metric.goal === "maximize" ? b.mean - a.mean : a.mean - b.mean));
    const keepCount = Math.max(minimumKept, Math.ceil(rule.keep * ranking.length));
    const best = ranking[0];
    const cut = best === undefined || ranking.length < 2 ? [] : ranking.slice(keepCount).filter((standing) => worseBy(standing.mean, best.mean) > margin);
    decisions.push({
      rung,
      fraction,
      ranking,
      kept: ranking.filter((standing) => !cut.includes(standing)).map((standing) => standing.configurationId),
      cut: cut.map((standing) => standing.configurationId),
    });
    if (best === undefined) continue;
    const ruleText = `keep the top max(${minimumKept}, ceil(${formatNumber(rule.keep)} x ${ranking.length})) = ${keepCount} configuration(s) at rung ${rung}; stop the others whose mean partial ${metric.name} (last ${rule.window} value(s)) is more than ${formatNumber(margin)} worse than the best's`;
    for (const standing of cut) {
      for (const run of inPlay) {
        if (run.configurationId !== standing.configurationId || !run.live || stoppedAt.has(run.blueprintId)) continue;
        const step = rungStep(fraction, run.maxSteps);
        stoppedAt.set(run.blueprintId, rung);
        stops.push({
          blueprintId: run.blueprintId,
          configurationId: run.configurationId,
          rung,
          fraction,
          rungStep: step,
          step: run.lastStep,
          score: standing.mean,
          best: best.mean,
          bestConfiguration: best.configurationId,
          margin,
          rule: ruleText,
          reason: `rung ${rung} of ${rule.rungs.length} (${formatNumber(fraction * 100)}% of max_steps = step ${step} of ${run.maxSteps}): ${standing.configurationId}'s partial ${metric.name} ${formatNumber(standing.mean)} is ${formatNumber(worseBy(standing.mean, best.mean))} worse than the best, ${best.configurationId}'s ${formatNumber(best.mean)}, outside the top ${keepCount} of ${ranking.length}`,
        });
      }
    }
  }
  return { rungs: decisions, stops };
}

/**
 * The stages early stopping acts in: those that try configurations (screen, refine). A
 * replication stage exists to measure its contenders with more seeds: cutting a
 * contender's new seeds at a rung would leave its comparison as open as before, and the
 * next stage would ask for the same seeds again. The leader (graph/early-stopping.ts) and
 * the research bench's simulation both ask this.
 */
export function earlyStopsApplyTo(stageKind: "screen" | "replicate" | "refine"): boolean {
  return stageKind !== "replicate";
}
