import { isSafeOverrideKey } from "../../blueprints/index.ts";
import type { Overrides } from "./recovery-playbook.ts";
import { A3rError } from "../../core/errors.ts";

/**
 * How configuration changes reach a run. Overrides are flat `key: value` pairs (front
 * matter `overrides`, then whatever the playbook or a diagnosis changed). They reach the
 * program three ways at once, so any trainer can pick one:
 *
 * 1. a copy of the blueprint's config file with the overrides merged in
 *    (`<result dir>/config/attempt-N.<ext>`), passed as `{config}` and `A3R_CONFIG`;
 * 2. `A3R_OVERRIDES`, the overrides as one JSON object;
 * 3. `{overrides}` in the command: `key=value` words, shell-quoted (Hydra style).
 *
 * A key names a path in the config: `optimizer.lr` is nested; a bare `lr` means the one
 * leaf called `lr` when there is exactly one (so `lr` reaches `optimizer.lr`), otherwise a
 * top-level key. Pure: the caller reads and writes the files.
 */
export type ConfigObject = Record<string, unknown>;

function isObject(value: unknown): value is ConfigObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every scalar leaf by dotted path, e.g. `{ "optimizer.lr": 0.05, train_batch_size: 4 }`. */
export function flattenConfig(config: ConfigObject, prefix = ""): Overrides {
  const flat: Overrides = {};
  for (const [key, value] of Object.entries(config)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isObject(value)) Object.assign(flat, flattenConfig(value, path));
    else if (typeof value === "number" || typeof value === "string" || typeof value === "boolean") flat[path] = value;
  }
  return flat;
}

/**
 * Base values the playbook may change, by full path and, when unambiguous, by leaf name
 * (so the playbook's `lr` finds `optimizer.lr`).
 */
export function baseValuesOf(config: ConfigObject | undefined): Overrides {
  if (!config) return {};
  const flat = flattenConfig(config);
  const byLeaf = new Map<string, string[]>();
  for (const path of Object.keys(flat)) {
    const leaf = path.split(".").pop()!;
    byLeaf.set(leaf, [...(byLeaf.get(leaf) ?? []), path]);
  }
  const values: Overrides = { ...flat };
  for (const [leaf, paths] of byLeaf) if (paths.length === 1 && !(leaf in values)) values[leaf] = flat[paths[0]!]!;
  return values;
}

export { isSafeOverrideKey };

/** The config path an override key lands on (see the module comment). */
export function resolveOverridePath(config: ConfigObject, key: string): string[] {
  if (!isSafeOverrideKey(key)) {
    throw new A3rError("CONFIG_INVALID", `override key ${JSON.stringify(key)} is not a config path`, {
      where: "overrides",
      hint: "use dotted names of config fields, such as optimizer.lr; __proto__, constructor and prototype are refused",
    });
  }
  if (key.includes(".")) return key.split(".");
  if (key in config) return [key];
  const matches = Object.keys(flattenConfig(config)).filter((path) => path.split(".").pop() === key);
  return matches.length === 1 ? matches[0]!.split(".") : [key];
}

/** A deep copy of the config with the overrides set. */
export function applyOverrides(config: ConfigObject, overrides: Overrides): ConfigObject {
  const copy = structuredClone(config);
  for (const [key, value] of Object.entries(overrides)) {
    const path = resolveOverridePath(config, key);
    let node: ConfigObject = copy;
    for (const part of path.slice(0, -1)) {
      if (!isObject(node[part])) node[part] = {};
      node = node[part] as ConfigObject;
    }
    node[path[path.length - 1]!] = value;
  }
  return copy;
}

export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** `lr=5e-06 batch_size=16`, each word shell-quoted. */
export function overridesAsWords(overrides: Overrides): string {
  return Object.entries(overrides)
    .map(([key, value]) => shellQuote(`${key}=${String(value)}`))
    .join(" ");
}

/** The placeholders a command may use; unknown `{words}` are left alone (shell braces). */
export const placeholderNames = [
  "config",
  "overrides",
  "overrides_json",
  "port",
  "attempt",
  "result_dir",
  "checkpoint_dir",
  "metrics_file",
  "swarm_url",
  "resume",
] as const;
export type PlaceholderName = (typeof placeholderNames)[number];

export function substitutePlaceholders(command: string, values: Partial<Record<PlaceholderName, string>>): string {
  return command.replace(/\{([a-z_]+)\}/g, (whole, name: string) => {
    const value = (values as Record<string, string | undefined>)[name];
    return value === undefined ? whole : value;
  });
}

export interface OverrideChange {
  key: string;
  from: string | number | boolean | undefined;
  to: string | number | boolean | undefined;
}

/** What differs between two override sets, for attempts.md. */
export function diffOverrides(before: Overrides, after: Overrides): OverrideChange[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.filter((key) => before[key] !== after[key]).map((key) => ({ key, from: before[key], to: after[key] }));
}

/** A unified-diff-style block a person reads in attempts.md. */
export function formatOverrideDiff(changes: OverrideChange[], extra: { commandBefore?: string; commandAfter?: string } = {}): string {
  const lines: string[] = [];
  for (const change of changes) {
    if (change.from !== undefined) lines.push(`- ${change.key}: ${String(change.from)}`);
    if (change.to !== undefined) lines.push(`+ ${change.key}: ${String(change.to)}`);
  }
  if (extra.commandBefore !== undefined && extra.commandAfter !== undefined && extra.commandBefore !== extra.commandAfter) {
    for (const line of extra.commandBefore.split("\n")) lines.push(`- command: ${line}`);
    for (const line of extra.commandAfter.split("\n")) lines.push(`+ command: ${line}`);
  }
  return lines.length === 0 ? "(no change to the configuration)" : `\`\`\`diff\n${lines.join("\n")}\n\`\`\``;
}
