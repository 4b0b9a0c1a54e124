import { describe, expect, it } from "vitest";
import type { DispatchRow } from "../../hosts/dispatch/dispatcher.ts";
import { blockBar, dispatchChanges, formatTable, progressBar, renderDispatchTable, rowNote, runFraction } from "./run-table.ts";

const row = (overrides: Partial<DispatchRow>): DispatchRow => ({
  campaign: "c",
  blueprintId: "b1",
  host: "gpu-1",
  state: "running",
  finished: false,
  gpuIndices: [0],
  step: 12,
  startedAt: "2026-11-29T10:00:00.000Z",
  timeBudgetMs: 4 * 3_600_000,
  lastMetrics: { reward_mean: 0.51234 },
  note: "",
  auditErrors: null,
  ...overrides,
});

describe("run tables", () => {
  it("aligns columns", () => {
    expect(
      formatTable(
        ["A", "LONG"],
        [
          ["xyz", "1"],
          ["q", "22"],
        ],
      ),
    ).toBe("A    LONG\nxyz  1\nq    22");
  });

  it("draws progress bars clamped to 0..100%", () => {
    expect(progressBar(0.5, 10)).toBe("[#####.....]  50%");
    expect(progressBar(2, 4)).toBe("[####] 100%");
    expect(progressBar(Number.NaN, 4)).toBe("[....]   0%");
  });

  it("draws unicode block bars with aligned percentages, and percentages alone at width 0", () => {
    expect(blockBar(0.52)).toBe("█████░░░░░  52%");
    expect(blockBar(1.5, 4)).toBe("████ 100%");
    expect(blockBar(Number.NaN, 4)).toBe("░░░░   0%");
    expect(blockBar(0.5, 0)).toBe(" 50%");
  });

  it("notes the audit of a fetched result before the dispatcher's note", () => {
    expect(rowNote(row({ note: "already dispatched" }))).toBe("already dispatched");
    expect(rowNote(row({ note: "x", auditErrors: 0 }))).toBe("fetched, audit clean");
    expect(rowNote(row({ auditErrors: 2 }))).toBe("fetched, 2 audit error(s)");
  });

  it("measures progress through the time budget, and full once finished", () => {
    const now = new Date("2026-11-29T11:00:00.000Z");
    expect(runFraction(row({}), now)).toBeCloseTo(0.25);
    expect(runFraction(row({ finished: true }), now)).toBe(1);
    expect(runFraction(row({ startedAt: null }), now)).toBe(0);
  });

  it("renders a dispatch table and prints only changed rows as lines", () => {
    const table = renderDispatchTable(
      [row({}), row({ blueprintId: "b2", host: null, state: "waiting", gpuIndices: [], step: null, lastMetrics: null })],
      new Date("2026-11-29T12:00:00.000Z"),
    );
    expect(table).toContain("b1         gpu-1  0     running");
    expect(table).toContain("reward_mean=0.512");
    expect(table).toMatch(/\[#{8}\.{8}\]\s+50%/);
    const previous = new Map<string, string>();
    expect(dispatchChanges([row({})], previous)).toEqual(["b1: running on gpu-1 (GPUs 0) step 12"]);
    expect(dispatchChanges([row({ step: 13 })], previous)).toEqual([]);
    expect(dispatchChanges([row({ state: "succeeded", finished: true, auditErrors: 0 })], previous)).toEqual([
      "b1: succeeded on gpu-1 (GPUs 0) step 12 - audit errors: 0",
    ]);
  });
});
