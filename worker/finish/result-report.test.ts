import { describe, expect, it } from "vitest";
import { makeMetricsRecord } from "../../campaign/index.ts";
import { renderCurves, renderResultMarkdown, type ResultReportInput } from "./result-report.ts";
import { formatProgress, budgetBar } from "../supervise/progress-reporter.ts";

const records = [1, 2, 3].map((step) =>
  makeMetricsRecord({ step, time: "2026-11-29T10:00:00.000Z", attempt: step < 3 ? 1 : 2, reward_mean: 0.2 * step, loss: step === 2 ? null : 1 / step }),
);

const input: ResultReportInput = {
  blueprintId: "b1",
  state: "succeeded",
  reason: null,
  hypothesis: "H2",
  prediction: "reward_mean at the last step >= 0.5",
  metric: { name: "reward_mean", goal: "maximize" },
  records,
  elapsedMs: 90_000,
  budgetMs: 3_600_000,
  finalOverrides: { lr: 0.0005 },
  attempts: [
    { attempt: 1, ending: "nan loss: metric loss was not finite at step 2", change: "lr 0.001 → 0.0005, resume from checkpoint" },
    { attempt: 2, ending: "succeeded" },
  ],
};

describe("result.md", () => {
  it("states outcome, verdict with numbers, final/min/max and what changed", () => {
    const text = renderResultMarkdown(input);
    expect(text).toContain("- Outcome: **succeeded**");
    expect(text).toContain("- Time: 1m30s of a 1h budget");
    expect(text).toContain("Verdict: **supported** — reward_mean = 0.6 (last, step 3) vs predicted >= 0.5: holds.");
    expect(text).toContain("Best reward_mean (maximize): 0.6 at step 3");
    expect(text).toContain("| loss | 0.33333 | 0.33333 | 1 | 2 |");
    expect(text).toContain("1. nan loss: metric loss was not finite at step 2 → lr 0.001 → 0.0005, resume from checkpoint");
    expect(text).toContain("Final overrides: lr=0.0005");
    expect(text).toContain("Metric: reward_mean (maximize); last recorded 0.6 at step 3");
    expect(text).toContain("no campaign owns it");
  });
  it("says where the leader's verdict is, and never asks the reader to judge by hand", () => {
    const text = renderResultMarkdown({ ...input, prediction: "the reward goes up faster than the baseline", campaign: "c-7", stage: 2 });
    expect(text).toContain("Verdict: **inconclusive**");
    expect(text).toContain("so the worker does not judge it");
    expect(text).toContain("the leader's verdict on the prediction, against the stage's other runs, is in stages/2/analysis.md of campaign c-7");
    expect(text).not.toContain("by hand");
  });

  it("draws the blueprint's metric in curves.svg", () => {
    const svg = renderCurves(records, "b1: reward_mean", "reward_mean");
    expect(svg).toContain('data-name="reward_mean"');
    expect(svg).not.toContain('data-name="loss"');
  });
});

describe("progress line", () => {
  it("shows attempt, step, metric and the budget as a bar", () => {
    expect(budgetBar(30, 120, 8)).toBe("[##------]");
    expect(formatProgress({ attempt: 2, step: 40, metricName: "reward_mean", metricValue: 0.51234, elapsedMs: 1_800_000, budgetMs: 3_600_000 })).toBe(
      "attempt 2 step 40 reward_mean=0.5123 [##########----------] 30m/1h",
    );
    expect(formatProgress({ attempt: 1, step: null, elapsedMs: 0, budgetMs: 60_000 })).toContain("waiting for the first step");
  });
});
