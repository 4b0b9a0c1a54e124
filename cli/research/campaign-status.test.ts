import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendEvent, campaignPaths, createCampaign } from "../../campaign/index.ts";
import { fastTopicText } from "../../test-support/fast-topic.ts";
import { renderCampaignTable, summarizeCampaign } from "./campaign-status.ts";

/**
 * `a3r status` shows the same best as the report: the last analysis's best over every stage
 * (lr-0.5, mean 0.4696 over 3 seeds after its replication), not stage 1's higher two-seed mean.
 */
describe("the best so far in a3r status", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-status-best-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("is the last analysis's campaign-wide best, with its seeds", async () => {
    await createCampaign(dir, "demo", fastTopicText(dir));
    const events = campaignPaths(dir, "demo").events;
    await appendEvent(events, "stage.analyzed", { stage: 1, best: { id: "lr-0.5", mean: 0.4801, n: 2 } });
    await appendEvent(events, "stage.analyzed", { stage: 2, best: { id: "lr-0.5", mean: 0.4696, n: 3 } });
    const summary = await summarizeCampaign(dir, "demo");
    expect(summary.best).toEqual({ id: "lr-0.5", mean: 0.4696, n: 3 });
    expect(renderCampaignTable([summary])).toContain("lr-0.5 (mean 0.4696, 3 seeds)");
  });

  it("falls back to the best of the stages' own bests for events written before the count", async () => {
    await createCampaign(dir, "old", fastTopicText(dir));
    const events = campaignPaths(dir, "old").events;
    await appendEvent(events, "stage.analyzed", { stage: 1, best: { id: "lr-0.5", mean: 0.4801 } });
    await appendEvent(events, "stage.analyzed", { stage: 2, best: { id: "lr-1", mean: 0.45 } });
    expect((await summarizeCampaign(dir, "old")).best).toEqual({ id: "lr-0.5", mean: 0.4801 });
  });
});
