/**
 * Plain predicates for parsed JSON, for the hot path's fast checks: a body the gateway
 * proxies (and the upstream's answer to it) is checked by hand first, and only a body that
 * fails the hand check goes through its zod schema, which then accepts it or names the
 * field that is wrong. zod costs the swarm server more per proxied completion than all the
 * gateway's other JSON work (bench/gateway.bench.ts); the hand checks cost almost nothing.
 *
 * A fast check may refuse a valid body (zod then decides), never accept one its schema
 * refuses, and it returns the parsed value itself, which equals zod's output because the
 * schemas involved only check (no defaults, no transforms). Each check has a test that
 * compares it with its schema on a corpus of bodies.
 */

/** A JSON object (not an array), without an own `__proto__` key (zod drops that key: the slow path keeps its output exact). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !Object.hasOwn(value, "__proto__");
}

/** A finite number, as z.number() requires. */
export function isFiniteNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** A safe integer, as z.number().int() requires. */
export function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

/** An array of safe integers (token ids). */
export function isIntegerArray(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (!isInteger(item)) return false;
  return true;
}

/** Absent (undefined) or null: the `.nullish()` / `.nullable().optional()` cases. */
export function isNullish(value: unknown): value is null | undefined {
  return value === undefined || value === null;
}
