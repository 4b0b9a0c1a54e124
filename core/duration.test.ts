import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "./duration.ts";

describe("parseDuration", () => {
  it.each([
    ["90m", 5_400_000],
    ["4h", 14_400_000],
    ["1h30m", 5_400_000],
    ["1h 30m", 5_400_000],
    ["2d", 172_800_000],
    ["45s", 45_000],
    ["1500ms", 1500],
    ["20min", 1_200_000],
    ["1.5h", 5_400_000],
    ["120", 120_000],
  ])("reads %s", (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each(["", "soon", "4 hours", "h4", "-5m", "5x"])("refuses %j", (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it("treats a bare number as seconds", () => {
    expect(parseDuration(30)).toBe(30_000);
    expect(parseDuration(Number.NaN)).toBeUndefined();
  });
});

describe("formatDuration", () => {
  it("round-trips what parseDuration reads", () => {
    for (const text of ["1h30m", "2d", "45s", "4h", "1d2h3m4s"]) {
      expect(formatDuration(parseDuration(text)!)).toBe(text);
    }
  });
});
