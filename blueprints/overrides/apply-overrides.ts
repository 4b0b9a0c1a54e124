import type { z } from "zod";
import { A3rError } from "../../core/errors.ts";
import { type ConfigObject, isConfigObject, isSafeOverrideKey, overridePath } from "./override-keys.ts";

/**
 * Overrides are flat `key: value` pairs: a blueprint's front matter `overrides`, then
 * whatever the worker's playbook or a diagnosis changed. This module applies them to a
 * config (the copy a run reads) and reads a config's current values back (what the
 * playbook changes from). Pure: callers read and write the files.
 */
export type OverrideValue = string | number | boolean;
export type Overrides = Record<string, OverrideValue>;

/** Every scalar leaf by dotted path, e.g. `{ "optimizer.lr": 0.05, train_batch_size: 4 }`. */
export function flattenConfig(config: ConfigObject, prefix = ""): Overrides {
  const flat: Overrides = {};
  for (const [key, value] of Object.entries(config)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isConfigObject(value)) Object.assign(flat, flattenConfig(value, path));
    else if (typeof value === "number" || typeof value === "string" || typeof value === "boolean") flat[path] = value;
  }
  return flat;
}

/** The config path of an override key as parts, refusing keys that are not config paths. */
function pathParts(key: string, config: ConfigObject, schema: z.ZodType | undefined): string[] {
  if (!isSafeOverrideKey(key)) {
    throw new A3rError("CONFIG_INVALID", `override key ${JSON.stringify(key)} is not a config path`, {
      where: "overrides",
      hint: "use dotted names of config fields, such as optimizer.lr; __proto__, constructor and prototype are refused",
    });
  }
  return overridePath(key, config, schema).split(".");
}

/** A deep copy of the config with the overrides set where override-keys.ts places them. */
export function applyOverrides(config: ConfigObject, overrides: Readonly<Record<string, unknown>>, schema?: z.ZodType): ConfigObject {
  const copy = structuredClone(config);
  for (const [key, value] of Object.entries(overrides)) {
    const path = pathParts(key, config, schema);
    let node: ConfigObject = copy;
    for (const part of path.slice(0, -1)) {
      if (!isConfigObject(node[part])) node[part] = {};
      node = node[part] as ConfigObject;
    }
    node[path[path.length - 1]!] = value;
  }
  return copy;
}

/**
 * The values a run starts from, by full path and, where unambiguous, by leaf name (so the
 * playbook's `lr` finds `optimizer.lr`). With a schema, the fields the config leaves to
 * their defaults are included at their default value: a swarm.yaml without `optimizer:`
 * still has an `optimizer.lr` to halve.
 */
export function baseValuesOf(config: ConfigObject | undefined, schema?: z.ZodType): Overrides {
  if (!config) return {};
  const flat = flattenConfig(config);
  const parsed = schema?.safeParse(config);
  if (parsed?.success && isConfigObject(parsed.data)) {
    for (const [path, value] of Object.entries(flattenConfig(parsed.data))) if (!(path in flat)) flat[path] = value;
  }
  const byLeaf = new Map<string, string[]>();
  for (const path of Object.keys(flat)) {
    const leaf = path.split(".").pop()!;
    byLeaf.set(leaf, [...(byLeaf.get(leaf) ?? []), path]);
  }
  const values: Overrides = { ...flat };
  for (const [leaf, paths] of byLeaf) if (paths.length === 1 && !(leaf in values)) values[leaf] = flat[paths[0]!]!;
  return values;
}
