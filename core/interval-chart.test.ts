import { describe, expect, it } from "vitest";
import { renderIntervalChart } from "./interval-chart.ts";

describe("renderIntervalChart", () => {
  const rows = [
    { label: "baseline", value: 0.5, low: 0.45, high: 0.55, note: "n=3" },
    { label: "lr-0.03 <best>", value: 0.8, low: 0.66, high: 0.92, highlight: true, note: "n=2" },
    { label: "lr-1", value: 0.52, note: "n=1" },
    { label: "lr-9", value: undefined, note: "n=0" },
  ];

  it("draws a dot per valued row and a bar per row with both bounds, in the given order", () => {
    const svg = renderIntervalChart(rows, { title: "final reward", valueLabel: "reward" });
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg.match(/<circle class="estimate"/g)).toHaveLength(3);
    expect(svg.match(/<g class="interval"/g)).toHaveLength(2);
    expect(svg).toContain("no value");
    const labels = [...svg.matchAll(/<circle class="estimate" data-label="([^"]*)"/g)].map((match) => match[1]);
    expect(labels).toEqual(["baseline", "lr-0.03 &lt;best&gt;", "lr-1"]);
    expect(svg).not.toContain("NaN");
    // The highlighted row is drawn in the accent colour.
    expect(svg).toMatch(/data-label="lr-0\.03 &lt;best&gt;" cx="[\d.]+" cy="[\d.]+" r="4" fill="#d62728"/);
  });

  it("puts higher values further right and keeps the reference line inside the axis", () => {
    const svg = renderIntervalChart(rows, { title: "t", valueLabel: "v", reference: { value: 0.1, label: "chance" } });
    const xs = [...svg.matchAll(/<circle class="estimate" data-label="[^"]*" cx="([\d.]+)"/g)].map((match) => Number(match[1]));
    expect(xs[1]).toBeGreaterThan(xs[2]!);
    expect(xs[2]).toBeGreaterThan(xs[0]!);
    const reference = Number(/<line class="reference" x1="([\d.]+)"/.exec(svg)![1]);
    expect(reference).toBeGreaterThanOrEqual(170);
    expect(reference).toBeLessThan(xs[0]!);
    expect(svg).toContain(">chance<");
  });

  it("grows with the number of rows and says so when there is nothing to draw", () => {
    const height = (svg: string) => Number(/height="(\d+)"/.exec(svg)![1]);
    expect(height(renderIntervalChart(rows, { title: "t", valueLabel: "v" }))).toBeGreaterThan(
      height(renderIntervalChart(rows.slice(0, 1), { title: "t", valueLabel: "v" })),
    );
    expect(renderIntervalChart([{ label: "a", value: undefined }], { title: "t", valueLabel: "v" })).toContain("no data yet");
  });
});
