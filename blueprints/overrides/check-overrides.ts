import type { z } from "zod";
import { applyOverrides } from "./apply-overrides.ts";
import { type ConfigObject, overridePath } from "./override-keys.ts";

/** A config and the schema of the engine that will load it. */
export interface EngineConfig {
  schema: z.ZodType;
  config: ConfigObject;
}

/**
 * The overrides merged into the base config exactly as the worker merges them, checked
 * against the engine's schema: one message per problem (at most 10), naming the override
 * and the schema's complaint. The leader's audit and `a3r blueprint validate` both call
 * it, so a blueprint they pass is one the worker's config copy and the server accept.
 */
export function checkOverrides(engine: EngineConfig, overrides: Readonly<Record<string, unknown>>): string[] {
  const pathOf = new Map(Object.keys(overrides).map((key) => [key, overridePath(key, engine.config, engine.schema)]));
  const keyAt = new Map([...pathOf].map(([key, path]) => [path, key]));
  let merged: ConfigObject;
  try {
    merged = applyOverrides(engine.config, overrides, engine.schema);
  } catch (error) {
    return [(error as Error).message];
  }
  const parsed = engine.schema.safeParse(merged);
  if (parsed.success) return [];
  return parsed.error.issues.slice(0, 10).map((issue) => {
    const path = issue.path.map(String).join(".");
    const key = keyAt.get(path) ?? unknownKeyOverride(issue, path, keyAt);
    const value = key === undefined ? undefined : overrides[key];
    return key === undefined
      ? `the base config with these overrides fails the engine's schema at ${path || "(top)"}: ${issue.message}`
      : `override ${key}=${String(value)} (config field ${pathOf.get(key)}) fails the engine's schema: ${issue.message}`;
  });
}

/** zod reports an unknown key at its parent object, with the key names beside it. */
function unknownKeyOverride(issue: z.core.$ZodIssue, parent: string, keyAt: Map<string, string>): string | undefined {
  if (issue.code !== "unrecognized_keys") return undefined;
  for (const name of issue.keys) {
    const key = keyAt.get(parent ? `${parent}.${name}` : name);
    if (key !== undefined) return key;
  }
  return undefined;
}
