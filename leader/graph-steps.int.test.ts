import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCampaign, newRunStatus, readLedger } from "../campaign/index.ts";
import type { CampaignPaths } from "../campaign/index.ts";
import { fixtureTopicText } from "../test-support/fixture-topic.ts";
import { bookUnbookedGpuHours, gpuHoursUsed } from "./graph-steps.ts";
import { planNext } from "./heuristic-planner.ts";
import { parseTopic } from "./topic.ts";
import { draftStageBlueprints, writeBlueprintTexts } from "./write-blueprints.ts";

/** GPU-hours of runs whose worker could not book them (remote hosts), booked by the leader from the fetched status.json. */
describe("booking GPU-hours the workers did not book", () => {
  let runsDir: string;
  let paths: CampaignPaths;
  let files: string[];

  beforeEach(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-gpu-book-"));
    const text = fixtureTopicText({ stages: 1 }).replace("gpus: 0", "gpus: 2");
    paths = (await createCampaign(runsDir, "gpus", text)).paths;
    const topic = parseTopic(text);
    const step = planNext({ topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
    if (step.kind !== "stage") throw new Error(step.explanation);
    files = await writeBlueprintTexts(paths, 1, draftStageBlueprints(topic, step.plan, paths));
  });
  afterEach(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  const writeStatus = async (blueprintId: string, state: "succeeded" | "running", minutes: number) => {
    await mkdir(paths.result(blueprintId), { recursive: true });
    const status = newRunStatus({ state, attempt: 1, host: "gpu-box", startedAt: "2026-11-29T10:00:00.000Z", heartbeatAt: new Date(Date.parse("2026-11-29T10:00:00.000Z") + minutes * 60_000).toISOString() });
    await writeFile(join(paths.result(blueprintId), "status.json"), JSON.stringify(status));
  };

  it("books each finished run once (gpus × start to last heartbeat), leaves running and already booked runs alone", async () => {
    await writeStatus("s1-baseline-seed1", "succeeded", 30);
    await writeStatus("s1-lr-0.01-seed1", "running", 10);
    expect(await bookUnbookedGpuHours(paths, files)).toEqual(["s1-baseline-seed1"]);
    expect(await bookUnbookedGpuHours(paths, files)).toEqual([]);
    expect(await gpuHoursUsed(paths)).toBeCloseTo(1, 9);
    const { entries } = await readLedger(paths.ledger);
    expect(entries).toMatchObject([{ kind: "gpu", blueprintId: "s1-baseline-seed1", host: "gpu-box", gpus: 2, hours: 0.5 }]);

    await writeStatus("s1-lr-0.01-seed1", "succeeded", 15);
    expect(await bookUnbookedGpuHours(paths, files)).toEqual(["s1-lr-0.01-seed1"]);
    expect(await gpuHoursUsed(paths)).toBeCloseTo(1.5, 9);
  });
});
