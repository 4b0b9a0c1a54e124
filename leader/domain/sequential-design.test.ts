import { describe, expect, it } from "vitest";
import { seededNormal } from "../../core/seeded-normal.ts";
import { normalQuantile } from "./student-t.ts";
import { designText, lookLevels, spentAlpha } from "./sequential-design.ts";

describe("sequential design: Pocock-type alpha spending", () => {
  it("spends 0.05 over the campaign, front-loaded", () => {
    expect(spentAlpha(0)).toBe(0);
    expect(spentAlpha(1)).toBeCloseTo(0.05, 12);
    expect(spentAlpha(0.5)).toBeGreaterThan(0.025);
    expect(spentAlpha(2)).toBeCloseTo(0.05, 12);
  });

  it("matches the published Lan-DeMets Pocock-type boundaries", () => {
    // Two equally spaced looks: z boundaries 2.157 and 2.201 (Jennison & Turnbull 2000, table 7.6).
    const two = lookLevels([1, 2], 2);
    expect(two[0]!.boundary).toBeCloseTo(2.157, 2);
    expect(two[1]!.boundary).toBeCloseTo(2.201, 2);
    // A single look at full information is the fixed-sample test at 0.05.
    expect(lookLevels([10], 10)[0]!.level).toBeCloseTo(0.05, 4);
    expect(lookLevels([10], 10)[0]!.boundary).toBeCloseTo(normalQuantile(0.975), 3);
  });

  it("gives a look that adds no information, or comes past the budget, no level of its own", () => {
    const looks = lookLevels([4, 4, 12, 14], 12);
    expect(looks[1]!.level).toBe(0);
    expect(looks[3]!.level).toBe(0);
    expect(looks[2]!.level).toBeGreaterThan(0);
    expect(designText(looks[2])).toMatch(/look 3 at 100% of the experiment budget tests at 0\.0\d+/);
  });

  it("holds the chance of any false claim over the looks at 0.05 (simulated: standardized sums under no difference)", () => {
    const schedule = [4, 5, 6, 7, 8, 9, 10, 11, 12];
    const looks = lookLevels(schedule, 12);
    // Seeded: the same figure every run.
    const gaussian = seededNormal(88172645);
    const trials = 20000;
    let falseClaims = 0;
    let fixedFalseClaims = 0;
    for (let trial = 0; trial < trials; trial += 1) {
      let sum = 0;
      let previous = 0;
      let claimed = false;
      let fixedClaimed = false;
      for (const look of looks) {
        sum += gaussian() * Math.sqrt(look.information - previous);
        previous = look.information;
        const z = Math.abs(sum) / Math.sqrt(look.information);
        if (z >= look.boundary) claimed = true;
        if (z >= normalQuantile(0.975)) fixedClaimed = true;
      }
      if (claimed) falseClaims += 1;
      if (fixedClaimed) fixedFalseClaims += 1;
    }
    // About 0.05 (the simulation's standard error is 0.0015), where testing each look at 0.05 gives far more.
    expect(falseClaims / trials).toBeLessThan(0.055);
    expect(falseClaims / trials).toBeGreaterThan(0.04);
    expect(fixedFalseClaims / trials).toBeGreaterThan(0.1);
  });
});
