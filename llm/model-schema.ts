import { z } from "zod";

type JsonSchema = Record<string, unknown>;

/** What a provider is told about the answer it must give. */
export interface OutputSpecification {
  name: string;
  /** Always an object schema: providers want an object at the root. */
  jsonSchema: JsonSchema;
  /** True when the schema meets OpenAI's strict mode rules (every property required, no extra keys). */
  strictCompatible: boolean;
  /** True when a non-object schema was wrapped as `{ value: ... }`; `unwrapAnswer` undoes it. */
  wrapped: boolean;
}

const wrapperKey = "value";

/**
 * JSON Schema of what the model must produce: the schema's input side (what goes into
 * `parse`), without `$schema`, and objects closed to extra keys since z.object would
 * strip them anyway.
 */
export function toModelJsonSchema(schema: z.ZodType): JsonSchema {
  const converted = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  delete converted.$schema;
  return closeObjects(converted) as JsonSchema;
}

export function outputSpecification(schema: z.ZodType, name = "answer"): OutputSpecification {
  const converted = toModelJsonSchema(schema);
  const wrapped = converted.type !== "object";
  const jsonSchema: JsonSchema = wrapped
    ? { type: "object", properties: { [wrapperKey]: converted }, required: [wrapperKey], additionalProperties: false }
    : converted;
  return { name, jsonSchema, strictCompatible: isStrictCompatible(jsonSchema), wrapped };
}

export function unwrapAnswer(answer: unknown, specification: OutputSpecification): unknown {
  if (!specification.wrapped) return answer;
  if (answer !== null && typeof answer === "object" && wrapperKey in answer) {
    return (answer as Record<string, unknown>)[wrapperKey];
  }
  // A model that forgot the wrapper still gets validated (and repaired) on what it sent.
  return answer;
}

function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (node === null || typeof node !== "object") return node;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    // `properties` and `$defs` map names to schemas: recurse into the schemas, keep the names.
    result[key] = key === "properties" || key === "$defs" || key === "definitions" ? mapValues(value, closeObjects) : closeObjects(value);
  }
  if (result.type === "object" && result.properties !== undefined && !("additionalProperties" in result)) {
    result.additionalProperties = false;
  }
  return result;
}

function mapValues(value: unknown, map: (item: unknown) => unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, map(item)]));
}

/** OpenAI strict mode: every object lists all its properties as required and allows no others. */
export function isStrictCompatible(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(isStrictCompatible);
  if (node === null || typeof node !== "object") return true;
  const schema = node as JsonSchema;
  if (schema.type === "object" || schema.properties !== undefined) {
    if (schema.additionalProperties !== false) return false;
    const properties = Object.keys((schema.properties as JsonSchema | undefined) ?? {});
    const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
    if (!properties.every((property) => required.includes(property))) return false;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === "properties" || key === "$defs" || key === "definitions") {
      if (value && typeof value === "object" && !Object.values(value).every(isStrictCompatible)) return false;
    } else if (typeof value === "object" && !isStrictCompatible(value)) {
      return false;
    }
  }
  return true;
}
