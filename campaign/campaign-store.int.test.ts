import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isA3rError } from "../core/errors.ts";
import { createCampaign, listCampaigns, loadCampaign } from "./campaign-store.ts";
import { readEvents } from "./event-log.ts";
import { auditCampaign } from "./audit-campaign.ts";

let runsDir: string;
beforeEach(async () => {
  runsDir = join(await mkdtemp(join(tmpdir(), "a3r-store-")), "runs");
});
afterEach(async () => {
  await rm(join(runsDir, ".."), { recursive: true, force: true });
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

describe("campaign store", () => {
  it("creates the campaign folder layout with topic, empty ledger and a first event", async () => {
    const campaign = await createCampaign(runsDir, "grpo-batching", "Does batching change GRPO's sample efficiency?");
    expect(campaign.paths.root).toBe(join(runsDir, "grpo-batching"));
    expect(await readFile(campaign.paths.topic, "utf8")).toBe("Does batching change GRPO's sample efficiency?\n");
    expect(existsSync(campaign.paths.stages)).toBe(true);
    expect(existsSync(campaign.paths.results)).toBe(true);
    expect(await readFile(campaign.paths.ledger, "utf8")).toBe("");
    const { events } = await readEvents(campaign.paths.events);
    expect(events).toEqual([expect.objectContaining({ kind: "campaign.created", campaignId: "grpo-batching" })]);
    expect(campaign.stages).toEqual([]);
    // A fresh campaign is already a clean one.
    expect(await auditCampaign(campaign.paths.root)).toEqual([]);
  });

  it("refuses to create a campaign twice, even when two creators race", async () => {
    const results = await Promise.allSettled([createCampaign(runsDir, "race", "one"), createCampaign(runsDir, "race", "two")]);
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    const failure = results.find((result) => result.status === "rejected") as PromiseRejectedResult;
    expect(isA3rError(failure.reason, "CAMPAIGN_EXISTS")).toBe(true);
    expect((failure.reason as { hint: string }).hint).toContain("race-2");
  });

  it("refuses unsafe ids before touching the disk", async () => {
    for (const id of ["../escape", "a/b", "UPPER", ".."]) {
      const error = await rejection(createCampaign(runsDir, id, "topic"));
      expect(isA3rError(error, "CAMPAIGN_ID_INVALID"), id).toBe(true);
    }
    expect(existsSync(runsDir)).toBe(false);
    expect(existsSync(join(runsDir, "..", "escape"))).toBe(false);
  });

  it("lists campaigns by id and loads their stages and blueprints", async () => {
    await createCampaign(runsDir, "beta", "b");
    const alpha = await createCampaign(runsDir, "alpha", "a");
    await mkdir(join(runsDir, "not-a-campaign"));
    await mkdir(join(runsDir, "Bad Name"));
    expect((await listCampaigns(runsDir)).map((campaign) => campaign.id)).toEqual(["alpha", "beta"]);

    const stage2 = alpha.paths.stage(2);
    const stage10 = alpha.paths.stage(10);
    await mkdir(stage2.blueprints, { recursive: true });
    await mkdir(stage10.blueprints, { recursive: true });
    await writeFile(stage2.plan, "# plan\n");
    await writeFile(stage2.blueprint("s2-b"), "b");
    await writeFile(stage2.blueprint("s2-a"), "a");
    await writeFile(join(stage2.blueprints, "notes.txt"), "not a blueprint");
    const loaded = await loadCampaign(runsDir, "alpha");
    expect(loaded.topic).toBe("a\n");
    expect(loaded.stages.map((stage) => [stage.number, stage.hasPlan, stage.blueprintFiles.length])).toEqual([
      [2, true, 2],
      [10, false, 0],
    ]);
    expect(loaded.stages[0]?.blueprintFiles).toEqual([stage2.blueprint("s2-a"), stage2.blueprint("s2-b")]);
  });

  it("says which campaigns exist when asked for a missing one", async () => {
    await createCampaign(runsDir, "alpha", "a");
    const error = await rejection(loadCampaign(runsDir, "alpah"));
    expect(isA3rError(error, "CAMPAIGN_NOT_FOUND")).toBe(true);
    expect((error as { hint: string }).hint).toContain("alpha");
    expect(await listCampaigns(join(runsDir, "nowhere"))).toEqual([]);
  });
});
