import { describe, expect, it } from "vitest";
import { judgePrediction, parsePrediction } from "./prediction.ts";

const series = [
  { step: 1, value: 0.2 },
  { step: 2, value: 0.7 },
  { step: 3, value: 0.55 },
];

describe("predictions", () => {
  it("parses the simple forms blueprints use", () => {
    expect(parsePrediction("reward_mean at the last step >= 0.60 (baseline ~0.45)")).toEqual({
      metric: "reward_mean",
      aggregate: "last",
      comparator: ">=",
      threshold: 0.6,
    });
    expect(parsePrediction("best reward_mean > 0.5")).toMatchObject({ aggregate: "best", comparator: ">" });
    expect(parsePrediction("val/loss <= 1e-2")).toEqual({ metric: "val/loss", aggregate: "last", comparator: "<=", threshold: 0.01 });
    expect(parsePrediction("the reward will go up")).toBeUndefined();
  });

  it("judges with the numbers: supported, refuted, inconclusive", () => {
    expect(judgePrediction("reward_mean at the last step >= 0.5", () => series)).toMatchObject({ verdict: "supported", observed: 0.55 });
    expect(judgePrediction("reward_mean at the last step >= 0.60", () => series).explanation).toBe(
      "reward_mean = 0.55 (last, step 3) vs predicted >= 0.6: does not hold",
    );
    expect(judgePrediction("best reward_mean >= 0.6", () => series)).toMatchObject({ verdict: "supported", observed: 0.7 });
    expect(judgePrediction("reward_mean >= 0.6", () => [])).toMatchObject({ verdict: "inconclusive" });
    expect(judgePrediction("it improves", () => series)).toMatchObject({ verdict: "inconclusive" });
    expect(judgePrediction(undefined, () => series)).toMatchObject({ verdict: "inconclusive" });
  });

  it("does not call the last value of an unfinished run final", () => {
    const verdict = judgePrediction("reward_mean at the last step >= 0.5", () => series, { finished: false });
    expect(verdict.verdict).toBe("inconclusive");
    expect(verdict.explanation).toContain("did not finish");
  });

  it("takes the minimum as best for a metric to minimize", () => {
    expect(judgePrediction("best loss <= 0.3", () => series, { goal: "minimize" })).toMatchObject({ verdict: "supported", observed: 0.2 });
  });
});
