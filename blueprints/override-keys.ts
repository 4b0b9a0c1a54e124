/** Path parts that would reach Object.prototype instead of the config (keys may come from a model). */
const forbiddenPathParts = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Whether an `overrides` key is a config path the worker may set: dotted names, no empty
 * part, none of the prototype names. Part of the blueprint contract, so `a3r blueprint
 * validate`, the leader's audit and the worker refuse the same keys.
 */
export function isSafeOverrideKey(key: string): boolean {
  return key.split(".").every((part) => part !== "" && !forbiddenPathParts.has(part));
}
