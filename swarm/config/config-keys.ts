import { z } from "zod";
import { delegateOf } from "../engines/port/delegating-schema.ts";

/**
 * swarm.yaml's keys are snake_case everywhere (AgentJet's names are). The camelCase
 * spelling a key had before (`gpuMemoryUtilization`, `baseUrl`, `startTimeoutMs`) is an
 * alias: it still works, and each use is reported as deprecated with its new spelling. An
 * alias is derived, not listed: at any object of the schema, a key that is unknown there
 * but whose snake_case form is known there. Given both spellings in one object (an override
 * written in the new spelling onto a file in the old one), the new one wins and the old one
 * is dropped, and said to be.
 */

export interface RenamedKey {
  /** Dotted path of the key as written (the old spelling). */
  from: string;
  /** Dotted path of the key it stands for (the new spelling). */
  to: string;
  /** The path of keys, as written, to the old key (to find its line). */
  writtenPath: string[];
}

export interface CanonicalKeys {
  value: unknown;
  /** Every old spelling that was renamed. */
  renamed: RenamedKey[];
  /** Old spellings dropped because the new spelling is given too. */
  conflicts: RenamedKey[];
}

/** `gpuMemoryUtilization` → `gpu_memory_utilization`; a snake_case key is returned as is. */
export function snakeCase(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z])([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
}

/** The object schemas a value at this schema may be checked against (through defaults, optionals, unions, pipes, lazies, delegates). */
export function objectsOf(schema: z.ZodType): z.ZodObject[] {
  const delegate = delegateOf(schema);
  if (delegate) return objectsOf(delegate);
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional) return objectsOf(schema.unwrap() as z.ZodType);
  if (schema instanceof z.ZodLazy) return objectsOf(schema.unwrap() as z.ZodType);
  if (schema instanceof z.ZodPipe) {
    // Keys are written against the input: `object.transform(f)` is a pipe whose input is the
    // object (its output a ZodTransform, which has no shape); `z.preprocess(f, object)` is one
    // whose input is the transform and output the object.
    const input = objectsOf(schema.in as z.ZodType);
    return input.length > 0 ? input : objectsOf(schema.out as z.ZodType);
  }
  if (schema instanceof z.ZodObject) return [schema];
  if (schema instanceof z.ZodDiscriminatedUnion || schema instanceof z.ZodUnion) {
    return (schema.options as z.ZodType[]).flatMap(objectsOf);
  }
  return [];
}

/** Of a discriminated union's objects, those whose `kind` literal the value names (all of them when none does). */
function objectsFor(schemas: z.ZodType[], value: Record<string, unknown>): z.ZodObject[] {
  const objects = schemas.flatMap(objectsOf);
  const matching = objects.filter((object) => {
    const kind = object.shape.kind;
    return kind instanceof z.ZodLiteral && kind.value === value.kind;
  });
  return matching.length > 0 ? matching : objects;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value with every old spelling renamed to its new one (a copy; the input is not changed). */
export function canonicalKeys(value: unknown, schema: z.ZodType): CanonicalKeys {
  const renamed: RenamedKey[] = [];
  const conflicts: RenamedKey[] = [];
  const walk = (node: unknown, schemas: z.ZodType[], path: string[], writtenPath: string[], depth: number): unknown => {
    if (!isMapping(node) || depth > 16) return node;
    const objects = objectsFor(schemas, node);
    if (objects.length === 0) return node;
    const known = new Set(objects.flatMap((object) => Object.keys(object.shape)));
    const result: Record<string, unknown> = {};
    for (const [written, child] of Object.entries(node)) {
      let key = written;
      const snake = snakeCase(written);
      if (!known.has(written) && snake !== written && known.has(snake)) {
        const entry = { from: [...path, written].join("."), to: [...path, snake].join("."), writtenPath: [...writtenPath, written] };
        if (snake in node) {
          conflicts.push(entry);
          continue;
        }
        renamed.push(entry);
        key = snake;
      }
      const childSchemas = objects.map((object) => object.shape[key] as z.ZodType | undefined).filter((next): next is z.ZodType => next !== undefined);
      result[key] = walk(child, childSchemas, [...path, key], [...writtenPath, written], depth + 1);
    }
    return result;
  };
  return { value: walk(value, [schema], [], [], 0), renamed, conflicts };
}

/** The deprecation line for one old spelling. */
export function deprecationMessage(key: RenamedKey): string {
  return `deprecated key "${key.from}": write "${key.to}" (the camelCase spelling still works for now)`;
}

/** The line for an old spelling dropped because its new one is given too. */
export function droppedMessage(key: RenamedKey): string {
  return `deprecated key "${key.from}" ignored: "${key.to}" is given too, and wins (remove "${key.from}")`;
}
