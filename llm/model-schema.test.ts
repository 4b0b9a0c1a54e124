import { describe, expect, it } from "vitest";
import { z } from "zod";
import { isStrictCompatible, outputSpecification, toModelJsonSchema, unwrapAnswer } from "./model-schema.ts";

describe("model schema", () => {
  it("closes nested objects to extra keys and drops $schema", () => {
    const schema = toModelJsonSchema(z.object({ runs: z.array(z.object({ id: z.string() })) }));
    expect(schema).not.toHaveProperty("$schema");
    expect(schema).toEqual({
      type: "object",
      properties: { runs: { type: "array", items: { type: "object", properties: { id: { type: "string" } }, required: ["id"], additionalProperties: false } } },
      required: ["runs"],
      additionalProperties: false,
    });
  });

  it("keeps a property named like a keyword intact", () => {
    const schema = toModelJsonSchema(z.object({ type: z.string(), properties: z.number() }));
    expect(Object.keys(schema.properties as object)).toEqual(["type", "properties"]);
  });

  it("is strict-compatible only when every property is required", () => {
    expect(outputSpecification(z.object({ a: z.string(), b: z.number().nullable() })).strictCompatible).toBe(true);
    expect(outputSpecification(z.object({ a: z.string(), b: z.number().optional() })).strictCompatible).toBe(false);
    expect(outputSpecification(z.object({ a: z.object({ b: z.string().optional() }) })).strictCompatible).toBe(false);
    expect(outputSpecification(z.object({ a: z.record(z.string(), z.number()) })).strictCompatible).toBe(false);
    expect(isStrictCompatible({ type: "object", properties: {}, additionalProperties: false })).toBe(true);
  });

  it("wraps a non-object answer as { value } and unwraps it", () => {
    const specification = outputSpecification(z.array(z.number()), "numbers");
    expect(specification.wrapped).toBe(true);
    expect(specification.name).toBe("numbers");
    expect(specification.jsonSchema).toMatchObject({ type: "object", required: ["value"], properties: { value: { type: "array" } } });
    expect(unwrapAnswer({ value: [1, 2] }, specification)).toEqual([1, 2]);
    expect(unwrapAnswer([1, 2], specification)).toEqual([1, 2]);
    expect(unwrapAnswer({ value: 1 }, outputSpecification(z.object({ value: z.number() })))).toEqual({ value: 1 });
  });
});
