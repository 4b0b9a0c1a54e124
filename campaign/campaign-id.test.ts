import { describe, expect, it } from "vitest";
import { isA3rError } from "../core/errors.ts";
import { assertCampaignId, assertSafeBlueprintId, isCampaignId, slugifyCampaignId } from "./campaign-id.ts";
import { campaignPaths } from "./campaign-paths.ts";

function caught(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("campaign ids", () => {
  it.each(["grpo-batching", "a", "s1", "0-start", "x".repeat(63)])("accepts %s", (id) => {
    expect(isCampaignId(id)).toBe(true);
  });

  it.each(["", "..", ".", "../etc", "a/b", "a\\b", "Grpo", "-leading", "with space", "x".repeat(64), "ümlaut", "a.b"])(
    "refuses %j with CAMPAIGN_ID_INVALID and a valid suggestion",
    (id) => {
      const error = caught(() => assertCampaignId(id));
      expect(isA3rError(error, "CAMPAIGN_ID_INVALID")).toBe(true);
      const suggestion = /e\.g\. "([^"]*)"/.exec((error as { hint: string }).hint)?.[1];
      expect(suggestion).toBeDefined();
      expect(isCampaignId(suggestion!)).toBe(true);
    },
  );

  it("slugifies free text into a valid id", () => {
    expect(slugifyCampaignId("GRPO batching, v2!")).toBe("grpo-batching-v2");
    expect(slugifyCampaignId("  Café au lait  ")).toBe("cafe-au-lait");
    expect(slugifyCampaignId("../../etc/passwd")).toBe("etc-passwd");
    expect(slugifyCampaignId("!!!")).toBe("campaign");
    const long = slugifyCampaignId(`${"ab-".repeat(40)}end`);
    expect(long.length).toBeLessThanOrEqual(63);
    expect(isCampaignId(long)).toBe(true);
  });

  it("never builds a path from an unsafe id", () => {
    expect(
      isA3rError(
        caught(() => campaignPaths("/runs", "../x")),
        "CAMPAIGN_ID_INVALID",
      ),
    ).toBe(true);
    const paths = campaignPaths("/runs", "demo");
    expect(paths.result("s1-lr-3e-6")).toBe("/runs/demo/results/s1-lr-3e-6");
    expect(paths.stage(2).blueprint("s2-a")).toBe("/runs/demo/stages/2/blueprints/s2-a.md");
    expect(paths.stage(2).plan).toBe("/runs/demo/stages/2/plan.md");
    for (const bad of ["..", "../x", "a/b", ".hidden", ""]) {
      expect(
        isA3rError(
          caught(() => paths.result(bad)),
          "BLUEPRINT_ID_UNSAFE",
        ),
        bad,
      ).toBe(true);
    }
    expect(() => assertSafeBlueprintId("s1-lr-3.0e-6")).not.toThrow();
  });
});
