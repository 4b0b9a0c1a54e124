import { baselineSettings, bestConfiguration, sameSettings, type Goal } from "../../domain/configurations.ts";
import type { ConfigurationSummary } from "../../domain/planner.ts";
import { boundText, clampToBound, type KnobBound } from "../../domain/knob-bounds.ts";
import type { KnobValue } from "../../domain/topic.ts";

/**
 * Where a refinement stage looks, around the best configuration so far, in a fixed order
 * (so the same results always give the same stage):
 *
 * 1. the combination of each knob's winner of the one-factor-at-a-time screen (the value
 *    whose configuration, differing from the baseline in that knob only, scored best),
 *    when at least two knobs have a winner other than their baseline;
 * 2. for each numeric knob, in the topic's order, a value between the best one and each
 *    neighbouring tried value (the geometric mean when the values are positive and span a
 *    factor of 2 or more, as learning rates do; else the arithmetic mean; rounded to
 *    integers when every tried value is an integer);
 * 3. one step beyond the best value when it is the smallest or the largest tried (the same
 *    ratio, or difference, as to its neighbour), because the optimum may lie outside.
 *
 * Every value stays inside the knob's bounds (the topic's range and the engine schema's,
 * see domain/knob-bounds.ts): a step beyond that would leave them is moved onto the bound
 * (or dropped when nothing new is left), and a value outside the range tried so far says
 * it extrapolates. Candidates already measured, or equal to each other, are dropped. Pure.
 */
export interface RefinementCandidate {
  settings: Record<string, KnobValue>;
  purpose: string;
  /** What the candidate extrapolates, when a value lies outside the range tried. */
  extrapolation?: string;
}

export function refinementCandidates(
  knobs: Record<string, KnobValue[]>,
  summaries: ConfigurationSummary[],
  goal: Goal,
  bounds: Record<string, KnobBound> = {},
): RefinementCandidate[] {
  const best = bestConfiguration(summaries, goal);
  if (!best) return [];
  const baseline = baselineSettings(knobs);
  const candidates: RefinementCandidate[] = [];
  const add = (settings: Record<string, KnobValue>, purpose: string, extrapolation?: string): void => {
    if (summaries.some((summary) => sameSettings(summary.configuration.settings, settings))) return;
    if (candidates.some((candidate) => sameSettings(candidate.settings, settings))) return;
    candidates.push({ settings, purpose, ...(extrapolation === undefined ? {} : { extrapolation }) });
  };

  const winners = screenWinners(knobs, baseline, summaries, goal);
  const changed = Object.entries(winners).filter(([name, value]) => value !== baseline[name]);
  if (changed.length >= 2) {
    add(
      { ...baseline, ...winners },
      `combines each knob's best screened value (${changed.map(([name, value]) => `${name}=${String(value)}`).join(", ")}), which the one-factor screen never ran together`,
    );
  }

  for (const name of Object.keys(knobs)) {
    const value = best.configuration.settings[name];
    if (typeof value !== "number") continue;
    const tried = triedValues(name, summaries);
    if (!tried.every((item) => typeof item === "number")) continue;
    const numbers = (tried as number[]).sort((left, right) => left - right);
    const index = numbers.indexOf(value);
    const integers = numbers.every(Number.isInteger);
    const geometric = numbers.every((item) => item > 0) && numbers[numbers.length - 1]! / numbers[0]! >= 2;
    const between = (a: number, b: number): number => round(geometric ? Math.sqrt(a * b) : (a + b) / 2, integers);
    const beyond = (from: number, to: number): number => round(geometric ? (to * to) / from : to + (to - from), integers);
    const lower = numbers[index - 1];
    const upper = numbers[index + 1];
    for (const neighbour of [lower, upper]) {
      if (neighbour === undefined) continue;
      const middle = between(value, neighbour);
      if (middle !== value && middle !== neighbour)
        add({ ...best.configuration.settings, [name]: middle }, `${name}=${middle} lies between the best ${name}=${value} and the tried ${name}=${neighbour}`);
    }
    if (numbers.length >= 2 && (lower === undefined || upper === undefined)) {
      const neighbour = (lower ?? upper)!;
      const step = beyond(neighbour, value);
      const bound = bounds[name];
      const inside = Number.isFinite(step) ? clampToBound(step, bound, value) : undefined;
      const outside = inside === undefined ? undefined : round(inside, integers);
      if (outside !== undefined && outside !== value && (!integers || outside > 0 || numbers[0]! <= 0)) {
        const moved =
          outside !== round(step, integers) && bound
            ? ` (one step would be ${step}; kept ${boundText(bound)}${bound.source ? `, the bound of ${bound.source}` : ""})`
            : "";
        add(
          { ...best.configuration.settings, [name]: outside },
          `${name}=${value} is the ${lower === undefined ? "smallest" : "largest"} value tried and the best; ${name}=${outside} looks one step beyond it${moved}`,
          `${name}=${outside} lies outside the tried range ${numbers[0]}–${numbers[numbers.length - 1]}: an extrapolation`,
        );
      }
    }
  }
  return candidates;
}

/** Per knob, the value whose baseline-except-that-knob configuration has the best mean. */
function screenWinners(
  knobs: Record<string, KnobValue[]>,
  baseline: Record<string, KnobValue>,
  summaries: ConfigurationSummary[],
  goal: Goal,
): Record<string, KnobValue> {
  const winners: Record<string, KnobValue> = {};
  for (const name of Object.keys(knobs)) {
    const screened = summaries.filter((summary) =>
      Object.keys(summary.configuration.settings).every((key) => key === name || summary.configuration.settings[key] === baseline[key]),
    );
    const winner = bestConfiguration(screened, goal);
    winners[name] = winner ? winner.configuration.settings[name]! : baseline[name]!;
  }
  return winners;
}

function triedValues(name: string, summaries: ConfigurationSummary[]): KnobValue[] {
  const values: KnobValue[] = [];
  for (const summary of summaries) {
    const value = summary.configuration.settings[name];
    if (value !== undefined && summary.sample.n > 0 && !values.includes(value)) values.push(value);
  }
  return values;
}

function round(value: number, integer: boolean): number {
  return integer ? Math.round(value) : Number(value.toPrecision(3));
}
