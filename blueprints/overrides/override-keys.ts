import type { z } from "zod";
import { schemaLeaves } from "./schema-leaves.ts";

/**
 * Where an override key lands in a config: the one rule the leader's audit, `a3r blueprint
 * validate`, the worker's config copy and its recovery playbook all follow, so what passes
 * validation is what runs.
 *
 * 1. A dotted key is a path: `optimizer.lr`.
 * 2. A bare key the config has at its top level stays there: `train_batch_size`.
 * 3. A bare key that is the last part of exactly one leaf of the config goes to that leaf:
 *    `lr` → `optimizer.lr`.
 * 4. A bare key the config does not hold at all goes to the one leaf of the config's
 *    schema with that name, when there is exactly one and a schema is known: `lr` →
 *    `optimizer.lr` for a swarm.yaml that leaves out its optional `optimizer:` section.
 * 5. Otherwise it is a new top-level key (a classic trainer's config may take any key).
 */
export type ConfigObject = Record<string, unknown>;

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

export function isConfigObject(value: unknown): value is ConfigObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every leaf path of a config (objects are walked; arrays and scalars are leaves). */
export function configLeafPaths(config: ConfigObject, prefix = ""): string[] {
  return Object.entries(config).flatMap(([key, value]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return isConfigObject(value) ? configLeafPaths(value, path) : [path];
  });
}

const endsWithLeaf = (key: string) => (path: string) => path === key || path.endsWith(`.${key}`);

/** The dotted config path an override key lands on (rules 1–5 above). */
export function overridePath(key: string, config: ConfigObject, schema?: z.ZodType): string {
  if (key.includes(".") || Object.hasOwn(config, key)) return key;
  const inConfig = configLeafPaths(config).filter(endsWithLeaf(key));
  if (inConfig.length === 1) return inConfig[0]!;
  if (inConfig.length > 1 || !schema) return key;
  const inSchema = [...schemaLeaves(schema).keys()].filter(endsWithLeaf(key));
  return inSchema.length === 1 ? inSchema[0]! : key;
}
