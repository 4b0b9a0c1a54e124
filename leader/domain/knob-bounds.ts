import type { KnobRange } from "./topic.ts";

/**
 * The values a knob may take: the topic's declared range (`knobs: { clip: { values, min,
 * max } }`) and the engine config schema's bounds (leader/design/engine-schema.ts), merged
 * to the tighter of the two. Refinement proposals stay inside; a value past what the
 * campaign has tried is marked as an extrapolation. Pure.
 */
export interface KnobBound {
  min?: number;
  max?: number;
  /** The bound itself is not allowed (a schema's `positive()` is min 0, exclusive). */
  minExclusive?: boolean;
  maxExclusive?: boolean;
  integer?: boolean;
  /** Where the bound comes from, for the plan's text ("the topic", "the engine schema"). */
  source?: string;
}

export function mergeBounds(...sources: (Record<string, KnobBound> | Record<string, KnobRange> | undefined)[]): Record<string, KnobBound> {
  const merged: Record<string, KnobBound> = {};
  for (const source of sources) {
    for (const [name, bound] of Object.entries(source ?? {}) as [string, KnobBound][]) {
      const into: KnobBound = { ...merged[name] };
      if (bound.min !== undefined && (into.min === undefined || bound.min > into.min || (bound.min === into.min && bound.minExclusive))) {
        into.min = bound.min;
        into.minExclusive = bound.minExclusive ?? false;
      }
      if (bound.max !== undefined && (into.max === undefined || bound.max < into.max || (bound.max === into.max && bound.maxExclusive))) {
        into.max = bound.max;
        into.maxExclusive = bound.maxExclusive ?? false;
      }
      if (bound.integer) into.integer = true;
      into.source = [into.source, bound.source].filter(Boolean).join(" and ") || undefined;
      merged[name] = into;
    }
  }
  return merged;
}

/** Whether a value lies inside the bound. */
export function withinBound(value: number, bound: KnobBound | undefined): boolean {
  if (!bound) return true;
  if (bound.integer && !Number.isInteger(value)) return false;
  if (bound.min !== undefined && (bound.minExclusive ? value <= bound.min : value < bound.min)) return false;
  if (bound.max !== undefined && (bound.maxExclusive ? value >= bound.max : value > bound.max)) return false;
  return true;
}

/**
 * The value moved inside the bound: onto an inclusive bound, or halfway from `from` (an
 * allowed value, e.g. the best one) to an exclusive one. Undefined when nothing inside
 * differs from `from`.
 */
export function clampToBound(value: number, bound: KnobBound | undefined, from: number): number | undefined {
  if (withinBound(value, bound)) return value;
  let clamped = value;
  if (bound!.max !== undefined && value > bound!.max) clamped = bound!.maxExclusive ? (from + bound!.max) / 2 : bound!.max;
  if (bound!.min !== undefined && value < bound!.min) clamped = bound!.minExclusive ? (from + bound!.min) / 2 : bound!.min;
  if (bound!.integer) clamped = value > from ? Math.floor(clamped) : Math.ceil(clamped);
  return clamped !== from && withinBound(clamped, bound) ? clamped : undefined;
}

export function boundText(bound: KnobBound): string {
  const low = bound.min === undefined ? "" : `${bound.minExclusive ? ">" : "≥"} ${bound.min}`;
  const high = bound.max === undefined ? "" : `${bound.maxExclusive ? "<" : "≤"} ${bound.max}`;
  return [low, high].filter(Boolean).join(" and ");
}
