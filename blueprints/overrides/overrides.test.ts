import { describe, expect, it } from "vitest";
import { z } from "zod";
import { applyOverrides, baseValuesOf, checkOverrides, flattenConfig, isSafeOverrideKey, overridePath, overrideValueProblems } from "./index.ts";

const swarmConfig = { train_batch_size: 4, optimizer: { lr: 0.05, clip: 0.2 }, sampling: { max_tokens: 8 }, model: { kind: "embedded", seed: 1 } };

describe("overrides", () => {
  it("flattens a config to dotted leaves and exposes unambiguous leaf names as base values", () => {
    expect(flattenConfig(swarmConfig)).toEqual({
      train_batch_size: 4,
      "optimizer.lr": 0.05,
      "optimizer.clip": 0.2,
      "sampling.max_tokens": 8,
      "model.kind": "embedded",
      "model.seed": 1,
    });
    const base = baseValuesOf({ ...swarmConfig, critic: { lr: 0.1 } });
    expect(base["optimizer.lr"]).toBe(0.05);
    // Two leaves called lr: a bare `lr` would be a guess, so it is not offered.
    expect(base.lr).toBeUndefined();
    expect(baseValuesOf(swarmConfig).lr).toBe(0.05);
  });

  it("sets a bare key on the one leaf of that name, a dotted key on its path, anything else at the top", () => {
    const merged = applyOverrides(swarmConfig, { lr: 0.01, "sampling.max_tokens": 4, extra: true });
    expect(merged).toMatchObject({ optimizer: { lr: 0.01, clip: 0.2 }, sampling: { max_tokens: 4 }, extra: true });
    expect(swarmConfig.optimizer.lr).toBe(0.05);
  });
});

describe("override keys from a model", () => {
  it("refuses paths that would reach Object.prototype, and leaves it untouched", () => {
    for (const key of ["__proto__.polluted", "constructor.prototype.polluted", "a.__proto__.b", "prototype"]) {
      expect(isSafeOverrideKey(key)).toBe(false);
      expect(() => applyOverrides({ a: 1 }, { [key]: "yes" })).toThrow(/not a config path/);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(isSafeOverrideKey("optimizer.lr")).toBe(true);
  });
});

/** A schema shaped like swarm.yaml's: every section optional, strict objects, defaults. */
const schema = z.strictObject({
  train_batch_size: z.number().int().positive().default(4),
  optimizer: z.strictObject({ lr: z.number().positive().default(0.2), clip: z.number().positive().max(1).default(0.2) }).default({ lr: 0.2, clip: 0.2 }),
  sampling: z.strictObject({ temperature: z.number().nonnegative().default(1) }).default({ temperature: 1 }),
  critic: z.strictObject({ beta: z.number().positive().default(0.1) }).optional(),
});

describe("one rule for where a key lands", () => {
  it("places a bare key on the schema's one leaf of that name when the config leaves the section out", () => {
    const config = { train_batch_size: 8 };
    // Both owners of this rule used to disagree here: the leader said optimizer.lr, the worker wrote a top-level lr.
    expect(overridePath("lr", config, schema)).toBe("optimizer.lr");
    expect(applyOverrides(config, { lr: 0.05 }, schema)).toEqual({ train_batch_size: 8, optimizer: { lr: 0.05 } });
    expect(schema.safeParse(applyOverrides(config, { lr: 0.05 }, schema)).success).toBe(true);
    expect(checkOverrides({ schema, config }, { lr: 0.05 })).toEqual([]);
  });

  it("prefers the config's own leaf, and never guesses between two", () => {
    expect(overridePath("lr", { head: { lr: 0.1 } }, schema)).toBe("head.lr");
    expect(overridePath("lr", { optimizer: { lr: 0.1 }, head: { lr: 0.1 } }, schema)).toBe("lr");
    const twoInSchema = z.strictObject({ actor: z.strictObject({ lr: z.number() }).optional(), critic: z.strictObject({ lr: z.number() }).optional() });
    expect(overridePath("lr", {}, twoInSchema)).toBe("lr");
    expect(overridePath("temperature", {}, schema)).toBe("sampling.temperature");
    expect(overridePath("new_knob", {}, schema)).toBe("new_knob");
    expect(overridePath("lr", {}, undefined)).toBe("lr");
  });

  it("names the override and the field when the merged config fails the schema", () => {
    expect(checkOverrides({ schema, config: {} }, { clip: 5 })).toEqual([
      expect.stringMatching(/^override clip=5 \(config field optimizer\.clip\) fails the engine's schema: /),
    ]);
    expect(checkOverrides({ schema, config: {} }, { lrr: 0.1 })).toEqual([expect.stringMatching(/^override lrr=0\.1 \(config field lrr\) fails/)]);
    expect(checkOverrides({ schema, config: {} }, { "__proto__.x": 1 })).toEqual([expect.stringMatching(/not a config path/)]);
  });

  it("offers the schema's defaults as base values for fields the config leaves out", () => {
    const base = baseValuesOf({ train_batch_size: 8 }, schema);
    expect(base).toMatchObject({ train_batch_size: 8, "optimizer.lr": 0.2, lr: 0.2, "sampling.temperature": 1 });
    expect(baseValuesOf({ train_batch_size: 8 })).toEqual({ train_batch_size: 8 });
  });

  it("agrees with itself for every leaf of the schema: what the check passes, the copy holds at that path", () => {
    const leaves = Object.keys(flattenConfig(schema.parse({})));
    for (const config of [{}, { train_batch_size: 2 }, { optimizer: { lr: 0.3 } }]) {
      for (const path of leaves) {
        const bare = path.split(".").pop()!;
        for (const key of [path, bare]) {
          const landed = overridePath(key, config, schema);
          const copy = applyOverrides(config, { [key]: 0.5 }, schema);
          const value = landed.split(".").reduce<unknown>((node, part) => (node as Record<string, unknown>)?.[part], copy);
          expect(value, `${key} in ${JSON.stringify(config)}`).toBe(0.5);
          expect(checkOverrides({ schema, config }, { [key]: 0.5 }).length === 0, key).toBe(schema.safeParse(copy).success);
        }
      }
    }
  });
});

describe("typed values a model proposes", () => {
  it("keeps each value's type, ports as port numbers, and no line breaks", () => {
    const known = { lr: 0.1, port: 8080, use_amp: true, name: "run" };
    expect(overrideValueProblems({ lr: 0.05, port: 9000, use_amp: false, name: "run-2", new_key: "x" }, known)).toEqual([]);
    expect(overrideValueProblems({ port: "1 ; touch FILE" }, known)).toEqual([expect.stringMatching(/^port="1 ; touch FILE" is not a port number/)]);
    expect(overrideValueProblems({ "server.port": 0 }, {})).toEqual([expect.stringMatching(/not a port number/)]);
    expect(overrideValueProblems({ lr: "0.05; rm -rf ~" }, known)).toEqual([expect.stringMatching(/^lr=.* is a string where the run has a number \(0\.1\)/)]);
    expect(overrideValueProblems({ name: "a\nb" }, known)).toEqual([expect.stringMatching(/line break/)]);
    expect(overrideValueProblems({ lr: Number.NaN }, known)).toEqual([expect.stringMatching(/not a finite number/)]);
  });
});
