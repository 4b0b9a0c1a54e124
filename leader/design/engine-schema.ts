import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import type { KnobBound } from "../domain/knob-bounds.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * The engine's config schema, as the leader uses it: the numeric bounds of each knob (so
 * refinement proposes nothing the engine would refuse) and a check of every blueprint's
 * overrides merged into the base config (so a `clip: 5` fails the leader's audit, not two
 * workers' retries). The schema comes from the caller (the CLI passes swarm's
 * `swarmConfigSchema`), because the leader may not import swarm/ (ARCHITECTURE.md).
 *
 * An override key lands where the worker puts it (worker/recover/overrides.ts): a dotted
 * key is a path; a bare key is a top-level key of the config, else the one leaf of that
 * name when there is exactly one; here also the one leaf of the schema, for a key the
 * config file does not spell out.
 */
export type EngineSchemas = Partial<Record<"swarm" | "classic", z.ZodType>>;

type Config = Record<string, unknown>;

/** The parts of zod 4's internals read here: definitions and checks. */
interface ZodInternals {
  _zod: {
    def: {
      type: string;
      innerType?: ZodInternals;
      in?: ZodInternals;
      out?: ZodInternals;
      shape?: Record<string, ZodInternals>;
      checks?: ZodInternals[];
      check?: string;
      value?: unknown;
      inclusive?: boolean;
      format?: string;
    };
  };
}

function unwrap(schema: ZodInternals): ZodInternals {
  let current = schema;
  for (let depth = 0; depth < 16; depth += 1) {
    const def = current._zod.def;
    const next = def.innerType ?? (def.type === "pipe" ? def.out : undefined);
    if (!next) break;
    current = next;
  }
  return current;
}

function shapeOf(schema: ZodInternals): Record<string, ZodInternals> | undefined {
  return unwrap(schema)._zod.def.shape;
}

/** Every leaf of the schema's objects by dotted path. */
function schemaLeaves(schema: ZodInternals, prefix = "", into: Record<string, ZodInternals> = {}, depth = 0): Record<string, ZodInternals> {
  const shape = shapeOf(schema);
  if (!shape || depth > 8) {
    if (prefix !== "") into[prefix] = schema;
    return into;
  }
  for (const [key, child] of Object.entries(shape)) schemaLeaves(child, prefix ? `${prefix}.${key}` : key, into, depth + 1);
  return into;
}

function configLeaves(config: Config, prefix = ""): string[] {
  return Object.entries(config).flatMap(([key, value]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return typeof value === "object" && value !== null && !Array.isArray(value) ? configLeaves(value as Config, path) : [path];
  });
}

/** The dotted path an override key lands on, as the worker resolves it. */
export function overridePath(key: string, config: Config, schema: z.ZodType): string {
  if (key.includes(".") || key in config) return key;
  const byLeaf = (paths: string[]) => paths.filter((path) => path.split(".").pop() === key);
  const inConfig = byLeaf(configLeaves(config));
  if (inConfig.length === 1) return inConfig[0]!;
  const inSchema = byLeaf(Object.keys(schemaLeaves(schema as unknown as ZodInternals)));
  return inConfig.length === 0 && inSchema.length === 1 ? inSchema[0]! : key;
}

/** A numeric leaf's bounds from its checks (min/max, exclusive or not, integer). */
export function numericBound(schema: z.ZodType, path: string): KnobBound | undefined {
  const leaf = schemaLeaves(schema as unknown as ZodInternals)[path];
  if (!leaf) return undefined;
  const number = unwrap(leaf);
  if (number._zod.def.type !== "number") return undefined;
  const bound: KnobBound = { source: "the engine's config schema" };
  for (const check of number._zod.def.checks ?? []) {
    const def = check._zod.def;
    if (def.check === "greater_than" && typeof def.value === "number") {
      bound.min = def.value;
      bound.minExclusive = def.inclusive === false;
    } else if (def.check === "less_than" && typeof def.value === "number") {
      bound.max = def.value;
      bound.maxExclusive = def.inclusive === false;
    } else if (def.check === "number_format" && (def.format === "safeint" || def.format === "int32" || def.format === "uint32")) {
      bound.integer = true;
    }
  }
  return bound.min === undefined && bound.max === undefined && !bound.integer ? undefined : bound;
}

/** The base config file of the topic as an object; undefined when it is absent or unreadable here. */
export async function readBaseConfig(topic: Topic): Promise<Config | undefined> {
  const file = topic.base?.config;
  if (!file) return undefined;
  try {
    const text = await readFile(file, "utf8");
    const data = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
    return typeof data === "object" && data !== null && !Array.isArray(data) ? (data as Config) : undefined;
  } catch {
    // The file may live only on a remote host: the worker checks it there.
    return undefined;
  }
}

/** The schema for the topic's mode, with its base config, or undefined when there is none to check against. */
export async function engineSchemaFor(schemas: EngineSchemas | undefined, topic: Topic): Promise<{ schema: z.ZodType; config: Config } | undefined> {
  const schema = topic.base ? schemas?.[topic.base.mode] : undefined;
  if (!schema) return undefined;
  const config = await readBaseConfig(topic);
  return config ? { schema, config } : undefined;
}

/** Per knob of the topic, the engine schema's bounds of the config field it lands on. */
export function engineBounds(engine: { schema: z.ZodType; config: Config }, knobs: readonly string[]): Record<string, KnobBound> {
  const bounds: Record<string, KnobBound> = {};
  for (const knob of knobs) {
    const bound = numericBound(engine.schema, overridePath(knob, engine.config, engine.schema));
    if (bound) bounds[knob] = bound;
  }
  return bounds;
}

/**
 * The overrides merged into the base config and checked against the engine's schema:
 * one message per problem, naming the override and the schema's complaint. Keys the
 * worker sets itself on every run (experiment_dir, port) are left to it.
 */
export function checkOverrides(engine: { schema: z.ZodType; config: Config }, overrides: Record<string, unknown>): string[] {
  const merged = structuredClone(engine.config);
  const byPath = new Map<string, string>();
  for (const [key, value] of Object.entries(overrides)) {
    const path = overridePath(key, engine.config, engine.schema);
    byPath.set(path, key);
    const parts = path.split(".");
    let node = merged;
    for (const part of parts.slice(0, -1)) {
      if (typeof node[part] !== "object" || node[part] === null) node[part] = {};
      node = node[part] as Config;
    }
    node[parts[parts.length - 1]!] = value;
  }
  const parsed = engine.schema.safeParse(merged);
  if (parsed.success) return [];
  return parsed.error.issues.slice(0, 10).map((issue) => {
    const path = issue.path.map(String).join(".");
    const key = byPath.get(path);
    const value = key === undefined ? undefined : overrides[key];
    return key === undefined
      ? `the base config with these overrides fails the engine's schema at ${path || "(top)"}: ${issue.message}`
      : `override ${key}=${String(value)} (config field ${path}) fails the engine's schema: ${issue.message}`;
  });
}
