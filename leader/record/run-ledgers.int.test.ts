import { appendFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCampaign, newRunStatus, readLedger, summarizeLedger } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { auditCampaign } from "../../campaign/audit-campaign.ts";
import { fixtureTopicText } from "../../test-support/fixture-topic.ts";
import { gpuHoursUsed } from "../graph/graph-steps.ts";
import { planNext } from "../planners/heuristic/heuristic-planner.ts";
import { bookUnbookedGpuHours, importRunLedgers, llmAllowanceFor } from "./run-ledgers.ts";
import { parseTopic } from "../domain/topic.ts";
import { draftStageBlueprints, writeBlueprintTexts } from "../design/write-blueprints.ts";

describe("a run's share of the LLM budget", () => {
  it("splits what is left of each budget over the stage's runs, in whole tokens", () => {
    expect(llmAllowanceFor({ llmTokens: 10_000, llmUsd: 2 }, { tokens: 3_001, usd: 0.5 }, 4)).toEqual({ tokens: 1_749, usd: 0.375 });
    expect(llmAllowanceFor({ llmTokens: undefined, llmUsd: 1 }, { tokens: 5, usd: 0 }, 2)).toEqual({ usd: 0.5 });
  });

  it("gives nothing when the topic sets no LLM budget, and the least positive amount when it is spent", () => {
    expect(llmAllowanceFor({ llmTokens: undefined, llmUsd: undefined }, { tokens: 0, usd: 0 }, 3)).toBeUndefined();
    // 1 token, a millionth of a dollar: every call is refused, and the flags stay valid.
    expect(llmAllowanceFor({ llmTokens: 100, llmUsd: 1 }, { tokens: 150, usd: 1 }, 3)).toEqual({ tokens: 1, usd: 1e-6 });
    expect(llmAllowanceFor({ llmTokens: 100, llmUsd: undefined }, { tokens: 99, usd: 0 }, 4)).toEqual({ tokens: 1 });
  });
});

/**
 * Costs a worker booked in its own ledger (on an ssh or queue host), fetched with its
 * result directory: imported once into the campaign's ledger, so `a3r status` and the
 * report count them and the campaign's budget is checked against them.
 */
describe("the costs of runs away from the campaign ledger", () => {
  let runsDir: string;
  let paths: CampaignPaths;
  let files: string[];
  const diagnose = (tokens: number) => ({
    time: "2026-11-29T10:05:00.000Z",
    kind: "llm",
    role: "diagnose",
    provider: "anthropic",
    model: "claude-sonnet-4-6",
    inputTokens: tokens,
    outputTokens: 10,
    cachedTokens: 0,
    costUsd: 0.01,
    durationMs: 900,
    ok: true,
  });
  const gpu = { time: "2026-11-29T11:00:00.000Z", kind: "gpu", blueprintId: "s1-baseline-seed1", host: "gpu-box", gpus: 2, hours: 0.75 };
  const line = (value: unknown) => `${JSON.stringify(value)}\n`;

  beforeEach(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-run-ledgers-"));
    const text = fixtureTopicText({ stages: 1 }).replace("gpus: 0", "gpus: 2");
    paths = (await createCampaign(runsDir, "remote", text)).paths;
    const topic = parseTopic(text);
    const step = planNext({ topic, history: [], usage: { gpuHours: 0, wallTimeMs: 0 } });
    if (step.kind !== "stage") throw new Error(step.explanation);
    files = await writeBlueprintTexts(paths, 1, draftStageBlueprints(topic, step.plan, paths));
  });
  afterEach(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  it("copies each valid line once, marked with its run and line; a later fetch adds only new lines", async () => {
    const runLedger = join(paths.result("s1-baseline-seed1"), "ledger.jsonl");
    await mkdir(paths.result("s1-baseline-seed1"), { recursive: true });
    await writeFile(runLedger, line(diagnose(400)) + '{"kind":"llm","role":"diagnose"}\n' + line(gpu) + line({ ...gpu, blueprintId: "s1-lr-0.01-seed1" }));
    const ids = ["s1-baseline-seed1", "s1-lr-0.01-seed1"];
    expect(await importRunLedgers(paths, ids)).toEqual(["s1-baseline-seed1"]);
    // A re-run after a crash adds nothing and says the same.
    expect(await importRunLedgers(paths, ids)).toEqual(["s1-baseline-seed1"]);
    let { entries } = await readLedger(paths.ledger);
    expect(entries.map((entry) => entry.importedFrom)).toEqual(["s1-baseline-seed1#1", "s1-baseline-seed1#3"]);

    await appendFile(runLedger, line(diagnose(600)));
    await importRunLedgers(paths, ids);
    ({ entries } = await readLedger(paths.ledger));
    const summary = summarizeLedger(entries);
    expect(summary.llm.byRole.diagnose).toMatchObject({ calls: 2, inputTokens: 1_000 });
    expect(summary.gpu.gpuHours).toBeCloseTo(1.5, 9);
    // The campaign's ledger stays valid for `a3r audit`.
    expect((await auditCampaign(paths.root)).filter((finding) => finding.code.startsWith("LEDGER"))).toEqual([]);
  });

  const writeStatus = async (blueprintId: string, state: "succeeded" | "running", minutes: number) => {
    await mkdir(paths.result(blueprintId), { recursive: true });
    const status = newRunStatus({
      state,
      attempt: 1,
      host: "gpu-box",
      startedAt: "2026-11-29T10:00:00.000Z",
      heartbeatAt: new Date(Date.parse("2026-11-29T10:00:00.000Z") + minutes * 60_000).toISOString(),
    });
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

  it("makes the worker's own GPU-hours the ones counted: the estimate from status.json is left for runs that booked none", async () => {
    for (const id of ["s1-baseline-seed1", "s1-lr-0.01-seed1"]) {
      await mkdir(paths.result(id), { recursive: true });
      const status = newRunStatus({
        state: "succeeded",
        attempt: 1,
        host: "gpu-box",
        startedAt: "2026-11-29T10:00:00.000Z",
        heartbeatAt: "2026-11-29T10:30:00.000Z",
      });
      await writeFile(join(paths.result(id), "status.json"), JSON.stringify(status));
    }
    await writeFile(join(paths.result("s1-baseline-seed1"), "ledger.jsonl"), line(gpu));
    await importRunLedgers(paths, ["s1-baseline-seed1", "s1-lr-0.01-seed1"]);
    expect(await bookUnbookedGpuHours(paths, files)).toEqual(["s1-lr-0.01-seed1"]);
    const { gpu: totals } = summarizeLedger((await readLedger(paths.ledger)).entries);
    expect(totals.byBlueprint).toEqual({ "s1-baseline-seed1": 1.5, "s1-lr-0.01-seed1": 1 });
  });
});
