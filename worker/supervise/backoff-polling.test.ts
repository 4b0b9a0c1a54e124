import { describe, expect, it } from "vitest";
import { backoffDetectionDelayMs, backoffLooksWithin, lookTimes } from "./backoff-polling.ts";

describe("backoff polling (AgentJet's 30 s → 16 min schedule)", () => {
  it("looks at 30 s, 1.5, 3.5, 7.5, 15.5 and 31.5 minutes, then every 16 minutes", () => {
    expect(lookTimes(40 * 60_000).map((ms) => ms / 1000)).toEqual([30, 90, 210, 450, 930, 1890, 2850]);
  });

  it("notices a failure at the next look", () => {
    expect(backoffDetectionDelayMs(2_000)).toBe(28_000);
    expect(backoffDetectionDelayMs(100_000)).toBe(110_000);
    expect(backoffDetectionDelayMs(2 * 3_600_000)).toBe(2_850_000 + 5 * 960_000 - 2 * 3_600_000);
  });

  it("counts the looks of a healthy hour", () => {
    expect(backoffLooksWithin(3_600_000)).toBe(7);
  });
});
