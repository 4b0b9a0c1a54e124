import { describe, expect, it } from "vitest";
import type { MetricsRecord } from "../../campaign/index.ts";
import { commonBudget, curveOnAxis, defaultBudgetAxis, perStep, stepConfound, truncateAt } from "./budget-axis.ts";

const at = (second: number) => new Date(Date.UTC(2026, 11, 1, 10, 0, second)).toISOString();
const run = (episodesPerStep: number, rewards: number[]): MetricsRecord[] =>
  rewards.map(
    (reward, index) =>
      ({
        step: index + 1,
        time: at(index * 2),
        episodes: episodesPerStep,
        tokens: episodesPerStep * 10,
        step_time_s: 2,
        reward_mean: reward,
      }) as unknown as MetricsRecord,
  );

describe("compute-fair curves", () => {
  it("puts a curve on the axis of what was spent", () => {
    const records = run(64, [0.1, 0.2, 0.3]);
    expect(curveOnAxis(records, "reward_mean", "steps")).toEqual([
      { step: 1, value: 0.1 },
      { step: 2, value: 0.2 },
      { step: 3, value: 0.3 },
    ]);
    expect(curveOnAxis(records, "reward_mean", "episodes")!.map((point) => point.step)).toEqual([64, 128, 192]);
    expect(curveOnAxis(records, "reward_mean", "tokens")!.map((point) => point.step)).toEqual([640, 1280, 1920]);
    expect(curveOnAxis(records, "reward_mean", "wall")!.map((point) => point.step)).toEqual([2, 4, 6]);
    expect(curveOnAxis(records, "reward_mean", "gpu_hours", 4)!.at(-1)!.step).toBeCloseTo((6 * 4) / 3600);
    // A run that does not say what a step consumed cannot be put on that axis.
    expect(curveOnAxis([{ step: 1, time: at(0), reward_mean: 0.1 } as unknown as MetricsRecord], "reward_mean", "episodes")).toBeUndefined();
  });

  it("compares runs at the budget all of them reached, interpolating the last point", () => {
    // Two configurations: 8 episodes per step vs 64. At equal steps the second looks better;
    // at equal episodes (the first's 5 steps = 40 episodes) it has not finished its first step.
    const small = curveOnAxis(run(8, [0.1, 0.2, 0.3, 0.4, 0.5]), "reward_mean", "episodes")!;
    const large = curveOnAxis(run(64, [0.6, 0.7, 0.8]), "reward_mean", "episodes")!;
    const budget = commonBudget([small, large]);
    expect(budget).toBe(40);
    expect(truncateAt(small, 40).at(-1)).toEqual({ step: 40, value: 0.5 });
    expect(truncateAt([{ step: 0, value: 0 }, ...large], 40).at(-1)!.value).toBeCloseTo(0.6 * (40 / 64));
  });

  it("says when comparing per step is confounded, and which axis is fair by default", () => {
    const perConfiguration = new Map([
      ["c1", perStep(run(8, [0.1, 0.2]), "episodes")!],
      ["c3", perStep(run(341, [0.1, 0.2]), "episodes")!],
    ]);
    expect(stepConfound(perConfiguration)).toMatchObject({ confounded: true, lowest: ["c1", 8], highest: ["c3", 341] });
    expect(
      stepConfound(
        new Map([
          ["a", 64],
          ["b", 66],
        ]),
      )?.confounded,
    ).toBe(false);
    expect(defaultBudgetAxis(["optimizer.lr"])).toBe("steps");
    expect(defaultBudgetAxis(["num_repeat"])).toBe("episodes");
    expect(defaultBudgetAxis(["swarm_mode_sample_collection_method"])).toBe("episodes");
  });
});
