import { describe, expect, it } from "vitest";
import { seededNormal } from "./seeded-normal.ts";

describe("seededNormal", () => {
  it("gives the same stream for a seed, another for another seed, with mean 0 and variance 1", () => {
    const a = seededNormal(7);
    const b = seededNormal(7);
    const c = seededNormal(8);
    const first = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(first);
    expect(Array.from({ length: 5 }, c)).not.toEqual(first);
    const draws = Array.from({ length: 20000 }, seededNormal(88172645));
    const mean = draws.reduce((sum, value) => sum + value, 0) / draws.length;
    const variance = draws.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (draws.length - 1);
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.abs(variance - 1)).toBeLessThan(0.05);
  });

  it("never gets stuck on a zero seed (xorshift's fixed point)", () => {
    const draws = Array.from({ length: 3 }, seededNormal(0));
    expect(new Set(draws).size).toBe(3);
  });
});
