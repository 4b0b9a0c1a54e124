import type { z } from "zod";

/**
 * Reads a zod 4 object schema as a tree of config fields: every leaf by dotted path, so an
 * override key a config file does not spell out (`lr` where swarm.yaml has no
 * `optimizer:` section) can still be placed on the field the schema defines
 * (`optimizer.lr`). Only definitions are read (zod's `_zod.def`), never parsing.
 */
export interface ZodInternals {
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

const internalsOf = (schema: z.ZodType) => schema as unknown as ZodInternals;

/** The schema under its wrappers (default, optional, nullable, pipe's output). */
export function unwrapSchema(schema: ZodInternals): ZodInternals {
  let current = schema;
  for (let depth = 0; depth < 16; depth += 1) {
    const def = current._zod.def;
    const next = def.innerType ?? (def.type === "pipe" ? def.out : undefined);
    if (!next) break;
    current = next;
  }
  return current;
}

function collectLeaves(schema: ZodInternals, prefix: string, into: Map<string, ZodInternals>, depth: number): void {
  const shape = unwrapSchema(schema)._zod.def.shape;
  if (!shape || depth > 8) {
    if (prefix !== "") into.set(prefix, schema);
    return;
  }
  for (const [key, child] of Object.entries(shape)) collectLeaves(child, prefix ? `${prefix}.${key}` : key, into, depth + 1);
}

/** Every leaf of the schema's objects by dotted path (a union or array is one leaf). */
export function schemaLeaves(schema: z.ZodType): Map<string, ZodInternals> {
  const leaves = new Map<string, ZodInternals>();
  collectLeaves(internalsOf(schema), "", leaves, 0);
  return leaves;
}
