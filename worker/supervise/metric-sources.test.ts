import { describe, expect, it } from "vitest";
import { MetricMerger, nonFiniteValue } from "./metric-sources.ts";

describe("MetricMerger", () => {
  it("keeps new steps only, in order, merging what several sources say about one step", () => {
    const merger = new MetricMerger();
    expect(
      merger.accept([
        { step: 2, values: { loss: 1 } },
        { step: 1, values: { loss: 2 } },
        { step: 2, values: { reward: 0.5 } },
      ]),
    ).toEqual([
      { step: 1, values: { loss: 2 } },
      { step: 2, values: { loss: 1, reward: 0.5 } },
    ]);
    expect(
      merger.accept([
        { step: 1, values: { loss: 9 } },
        { step: 2, values: { loss: 9 } },
        { step: 3, values: { loss: 0.5 } },
      ]),
    ).toEqual([{ step: 3, values: { loss: 0.5 } }]);
    expect(merger.lastStep).toBe(3);
  });

  it("keeps the time a source gives for a step", () => {
    expect(
      new MetricMerger().accept([
        { step: 1, values: { a: 1 }, time: "2026-11-29T10:00:00.000Z" },
        { step: 1, values: { b: 2 } },
      ]),
    ).toEqual([{ step: 1, values: { a: 1, b: 2 }, time: "2026-11-29T10:00:00.000Z" }]);
  });

  it("starts after the last recorded step when re-attaching", () => {
    expect(
      new MetricMerger(5).accept([
        { step: 5, values: { a: 1 } },
        { step: 6, values: { a: 2 } },
      ]),
    ).toEqual([{ step: 6, values: { a: 2 } }]);
  });

  it("finds the first non-finite value", () => {
    expect(nonFiniteValue({ step: 4, values: { reward: 1, loss: Number.NaN } })).toEqual({ step: 4, key: "loss" });
    expect(nonFiniteValue({ step: 4, values: { loss: 0.1 } })).toBeUndefined();
  });
});
