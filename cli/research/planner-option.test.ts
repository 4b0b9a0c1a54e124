import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createCampaign } from "../../campaign/index.ts";
import { parseTopic, registerPlanner, type Planner, type PlannerKind } from "../../leader/index.ts";
import { plannerChoiceFacts, plannerOfCampaign } from "./planner-option.ts";

describe("planner-option with a planner the CLI was never told about", () => {
  it("records a registered planner's choice at creation and makes that planner on resume", async () => {
    const folder = await mkdtemp(join(tmpdir(), "a3r-planner-option-"));
    const opened: string[] = [];
    const throwaway: PlannerKind = {
      name: "throwaway",
      description: "a test planner",
      create: (context) => {
        opened.push(context.campaignId);
        return { name: "throwaway", next: async () => ({ kind: "stop", reason: "exhausted", detail: "-" }) } as unknown as Planner;
      },
    };
    const unregister = registerPlanner(throwaway);
    try {
      const facts = plannerChoiceFacts("throwaway", {});
      expect(facts).toEqual({ planner: "throwaway", plannerWhy: "planner: throwaway (--planner throwaway)" });
      const campaign = await createCampaign(folder, "c1", "The question.", facts);
      const planner = await plannerOfCampaign(campaign.paths, parseTopic("The question.", { file: campaign.paths.topic }), {}, true);
      expect([planner.name, opened]).toEqual(["throwaway", ["c1"]]);
    } finally {
      unregister();
      await rm(folder, { recursive: true, force: true });
    }
  });
});
