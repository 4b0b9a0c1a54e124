import { describe, expect, it } from "vitest";
import { escapeXml, niceTicks, renderLineChart } from "./line-chart.ts";

describe("niceTicks", () => {
  it("covers the range with round steps", () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(3, 97)).toEqual([0, 20, 40, 60, 80, 100]);
    const flat = niceTicks(5, 5);
    expect(flat[0]).toBeLessThan(5);
    expect(flat[flat.length - 1]).toBeGreaterThan(5);
  });
});

describe("renderLineChart", () => {
  it("draws one path per series and escapes names", () => {
    const svg = renderLineChart(
      [
        {
          name: "lr=1e-3 <fast>",
          points: [
            { x: 0, y: 0.1 },
            { x: 10, y: 0.8 },
          ],
        },
        {
          name: "lr=1e-4",
          points: [
            { x: 0, y: 0.1 },
            { x: 5, y: Number.NaN },
            { x: 10, y: 0.4 },
          ],
        },
      ],
      { title: "reward_mean", xLabel: "step", yLabel: "reward" },
    );
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg.match(/<path class="series"/g)).toHaveLength(2);
    expect(svg).toContain(escapeXml("lr=1e-3 <fast>"));
    expect(svg).not.toContain("NaN");
  });

  it("says so when there is nothing to draw", () => {
    expect(renderLineChart([], { title: "t", xLabel: "x", yLabel: "y" })).toContain("no data yet");
  });
});
