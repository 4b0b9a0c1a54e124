import { describe, expect, it } from "vitest";
import {
  applyOverrides,
  baseValuesOf,
  diffOverrides,
  flattenConfig,
  formatOverrideDiff,
  isSafeOverrideKey,
  overridesAsWords,
  substitutePlaceholders,
} from "./overrides.ts";

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

  it("renders overrides as shell-quoted key=value words and fills only known placeholders", () => {
    expect(overridesAsWords({ lr: 5e-6, name: "a b" })).toBe("lr=0.000005 'name=a b'");
    expect(substitutePlaceholders("train.py --config {config} {overrides} ${HOME} {unknown}", { config: "/r/c.yaml", overrides: "lr=1" })).toBe(
      "train.py --config /r/c.yaml lr=1 ${HOME} {unknown}",
    );
  });

  it("writes a diff a person can read", () => {
    const changes = diffOverrides({ lr: 0.001, port: 80 }, { lr: 0.0005, port: 80, batch_size: 16 });
    expect(changes).toEqual([
      { key: "batch_size", from: undefined, to: 16 },
      { key: "lr", from: 0.001, to: 0.0005 },
    ]);
    expect(formatOverrideDiff(changes)).toBe("```diff\n+ batch_size: 16\n- lr: 0.001\n+ lr: 0.0005\n```");
    expect(formatOverrideDiff([], { commandBefore: "a", commandAfter: "b" })).toContain("- command: a\n+ command: b");
    expect(formatOverrideDiff([])).toBe("(no change to the configuration)");
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
