import type { z } from "zod";
import { type ConfigObject, type ConfigSchemas, overridePath, readConfigFile, schemaLeaves, unwrapSchema } from "../../blueprints/index.ts";
import type { KnobBound } from "../domain/knob-bounds.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * The engine's config schema, as the leader uses it: the numeric bounds of each knob (so
 * refinement proposes nothing the engine would refuse) and a check of every blueprint's
 * overrides merged into the base config (so a `clip: 5` fails the leader's audit, not two
 * workers' retries). The schema comes from the caller (the CLI passes swarm's
 * `swarmConfigSchema`), because the leader may not import swarm/ (ARCHITECTURE.md). Where
 * an override key lands is blueprints/overrides/' rule, the one the worker follows.
 */
export type EngineSchemas = ConfigSchemas;

type Config = ConfigObject;

/** Where an override key lands and the check of a blueprint's overrides: the one rule the worker follows too. */
export { checkOverrides, overridePath } from "../../blueprints/index.ts";

/** A numeric leaf's bounds from its checks (min/max, exclusive or not, integer). */
export function numericBound(schema: z.ZodType, path: string): KnobBound | undefined {
  const leaf = schemaLeaves(schema).get(path);
  if (!leaf) return undefined;
  const number = unwrapSchema(leaf);
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
  // The file may live only on a remote host: the worker checks it there.
  return file ? readConfigFile(file).catch(() => undefined) : undefined;
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
