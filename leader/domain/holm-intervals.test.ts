import { describe, expect, it } from "vitest";
import { alpha, holmIntervalLevel, welchTest } from "./comparisons.ts";
import { rankAgainstIncumbent } from "./incumbent.ts";
import type { ConfigurationSummary } from "./planner.ts";
import { summarizeSample } from "./statistics.ts";

const summary = (id: string, scores: number[]): ConfigurationSummary => ({
  configuration: { id, settings: {}, delta: {} },
  scores,
  sample: summarizeSample(scores),
  failed: 0,
  stage: 1,
});

/** Deterministic pseudo-random scores (a linear congruential generator), so the sweep is the same each run. */
function scoresOf(seed: number, n: number, mean: number, spread: number): number[] {
  let state = seed;
  return Array.from({ length: n }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return mean + spread * (state / 2 ** 31 - 0.5);
  });
}

describe("Holm-adjusted intervals agree with the Holm verdicts", () => {
  it("the case of issue 28: an unadjusted interval excluded 0 beside 'open'; the adjusted one does not", () => {
    // Three challengers, one clearly worse: the middle one is significant alone (p < 0.05) but not after Holm.
    const best = summary("best", [0.7, 0.75, 0.62, 0.69]);
    const middle = summary("middle", [0.54, 0.66, 0.48, 0.58]); // Welch p 0.039 alone
    const far = summary("far", [0.1, 0.12, 0.11, 0.1]);
    const close = summary("close", [0.68, 0.7, 0.6, 0.71]);
    const ranking = rankAgainstIncumbent([best, middle, far, close], { goal: "maximize" })!;
    const row = ranking.comparisons.find((comparison) => comparison.otherId === "middle")!;
    const plain = welchTest(best.scores, middle.scores)!;
    expect(plain.low).toBeGreaterThan(0); // what the report used to show: [>0, ...] ...
    expect(row.pHolm!).toBeGreaterThanOrEqual(alpha); // ... beside "open"
    expect(row.verdict).toBe("open");
    expect(row.low!).toBeLessThanOrEqual(0); // the adjusted interval reaches 0, as the verdict says
    expect(row.level).toBeGreaterThan(0.95);
  });

  it("over many random families: an interval excludes 0 exactly when its verdict is 'worse'", () => {
    let checked = 0;
    for (let family = 0; family < 200; family += 1) {
      const n = 2 + (family % 4);
      const summaries = [0, 1, 2, 3].map((index) => summary(`c${index}`, scoresOf(family * 7 + index + 1, n, 0.5 - 0.04 * index * (family % 3), 0.3)));
      const ranking = rankAgainstIncumbent(summaries, { goal: family % 2 === 0 ? "maximize" : "minimize" })!;
      for (const row of ranking.comparisons) {
        if (row.low === undefined) continue;
        const excludesZero = row.low > 0 || row.high! < 0;
        expect(excludesZero, `${row.otherId} p ${row.p} Holm ${row.pHolm} [${row.low}, ${row.high}]`).toBe(row.verdict === "worse");
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(300);
  });

  it("an equivalence verdict has its TOST interval inside the margin, and only then", () => {
    const best = summary("best", [0.5, 0.51, 0.5, 0.49, 0.5]);
    const same = summary("same", [0.5, 0.5, 0.49, 0.5, 0.495]);
    const unsure = summary("unsure", [0.4, 0.6, 0.45, 0.55, 0.5]);
    const ranking = rankAgainstIncumbent([best, same, unsure], { goal: "maximize", equivalence: 0.03 })!;
    for (const row of ranking.comparisons) {
      const inside = row.equivalenceLow! > -0.03 && row.equivalenceHigh! < 0.03;
      expect(inside, row.otherId).toBe(row.verdict === "equivalent");
    }
    expect(ranking.comparisons.find((row) => row.otherId === "same")?.verdict).toBe("equivalent");
    expect(ranking.comparisons.find((row) => row.otherId === "unsure")?.verdict).toBe("open");
  });

  it("the level is Holm's step level where no earlier step dominates, and the plain level without a test", () => {
    expect(holmIntervalLevel(0.01, 0.03, 3)).toBeCloseTo(1 - alpha / 3, 12);
    expect(holmIntervalLevel(undefined, undefined, 3)).toBeCloseTo(0.95, 12);
    expect(holmIntervalLevel(0, 0, 4)).toBeCloseTo(1 - alpha / 4, 12);
  });
});
