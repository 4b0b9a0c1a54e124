import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendMetrics, createCampaign, makeMetricsRecord, newRunStatus } from "../../campaign/index.ts";
import type { CampaignPaths, MetricsRecord } from "../../campaign/index.ts";
import { analysisPath, analyzeStage, analyzeStageResults } from "./analyze-stage.ts";
import type { RunRead } from "./analyze-stage.ts";
import { planNext } from "../planners/heuristic/heuristic-planner.ts";
import type { StagePlan } from "../domain/planner.ts";
import { loadTopic, type Topic } from "../domain/topic.ts";

const topicFile = resolve(import.meta.dirname, "../../examples/topics/embedded-lr.md");

function firstStage(topic: Topic, history: Parameters<typeof planNext>[0]["history"] = []): StagePlan {
  const step = planNext({ topic, history, usage: { gpuHours: 0, wallTimeMs: 0 } });
  if (step.kind !== "stage") throw new Error(step.explanation);
  return step.plan;
}

/** A result directory as a worker leaves it: status.json, metrics.jsonl, finish.flag. */
async function fakeRun(
  paths: CampaignPaths,
  id: string,
  state: "succeeded" | "failed" | "running",
  values: number[],
  reason: string | null = null,
): Promise<void> {
  const dir = paths.result(id);
  await mkdir(dir, { recursive: true });
  for (const [step, value] of values.entries()) await appendMetrics(join(dir, "metrics.jsonl"), { step: step + 1, rollout_reward_mean: value });
  await writeFile(join(dir, "status.json"), JSON.stringify(newRunStatus({ state, attempt: 1, host: "here", reason })));
  if (state !== "running") await writeFile(join(dir, "finish.flag"), `${state}\n`);
}

describe("analyzeStage", () => {
  let runsDir: string;
  let paths: CampaignPaths;
  let topic: Topic;

  beforeEach(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-leader-analyze-"));
    const loaded = await loadTopic(topicFile);
    topic = loaded.topic;
    paths = (await createCampaign(runsDir, "analyze", loaded.text)).paths;
  });
  afterEach(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  it("scores every run, summarizes configurations across seeds, judges predictions and keeps failures with their reasons", async () => {
    const plan = firstStage(topic);
    await fakeRun(paths, "s1-baseline-seed1", "succeeded", [0.4, 0.5, 0.6]);
    await fakeRun(paths, "s1-baseline-seed2", "succeeded", [0.42, 0.52, 0.62]);
    await fakeRun(paths, "s1-lr-0.05-seed1", "succeeded", [0.1, 0.2, 0.3]);
    await fakeRun(paths, "s1-lr-0.05-seed2", "failed", [], "host here unreachable: worker lost");
    await fakeRun(paths, "s1-lr-0.5-seed1", "succeeded", [0.8, 0.9, 1.0]);
    // s1-lr-0.5-seed2 never produced a result directory.

    const { analysis, file } = await analyzeStage(topic, plan, [], paths);
    expect(file).toBe(analysisPath(paths, 1));

    const baselineRun = analysis.experiments.find((item) => item.blueprintId === "s1-baseline-seed1")!;
    expect(baselineRun.curve).toMatchObject({ final: 0.6, best: 0.6, bestStep: 3 });
    expect(baselineRun.score).toBeCloseTo(0.5, 10); // area: the mean level over training

    const baseline = analysis.configurations.find((item) => item.id === "baseline")!;
    expect(baseline.n).toBe(2);
    expect(baseline.mean).toBeCloseTo(0.51, 10);
    // t(1) = 12.706: half width 12.706 * 0.01414 / sqrt(2) = 0.127
    expect(baseline.low).toBeCloseTo(0.383, 3);
    expect(baseline.high).toBeCloseTo(0.637, 3);

    expect(analysis.verdicts.map((verdict) => [verdict.configurationId, verdict.verdict])).toEqual([
      ["baseline", "supported"],
      ["lr-0.05", "refuted"],
      ["lr-0.5", "inconclusive"],
    ]);
    expect(analysis.verdicts[0]!.explanation).toMatch(/one-sided 95% bound [0-9.]+ is past 0\.03/);

    expect(analysis.outcomes.find((item) => item.blueprintId === "s1-lr-0.05-seed2")).toMatchObject({
      state: "failed",
      score: undefined,
      reason: "host here unreachable: worker lost",
    });
    expect(analysis.outcomes.find((item) => item.blueprintId === "s1-lr-0.5-seed2")).toMatchObject({ state: "missing", reason: "no result directory" });
    expect(analysis.configurations.find((item) => item.id === "lr-0.05")).toMatchObject({ n: 1, failed: 1 });
    expect(analysis.best).toMatchObject({ id: "lr-0.5" });
    expect(JSON.parse(JSON.stringify(analysis.outcomes))).toEqual(analysis.outcomes.map((item) => JSON.parse(JSON.stringify(item))));

    const text = await readFile(file, "utf8");
    expect(text).toMatch(/^# Stage 1 analysis/);
    expect(text).toMatch(/\| baseline \| 2 \| 0 \| 0\.51 \| \[0\.3829, 0\.6371\] \|/);
    expect(text).toMatch(/- \*\*lr-0\.05\*\*: REFUTED/);
    expect(text).toMatch(/- s1-lr-0\.05-seed2: failed: host here unreachable: worker lost/);
    expect(text).toMatch(/- s1-lr-0\.5-seed2: missing: no result directory/);
    expect(text).toMatch(/\[s1-baseline-seed1\]\(\.\.\/\.\.\/results\/s1-baseline-seed1\/\)/);
  });

  it("counts an unfinished run as not finished, and a run without the metric as unscored", async () => {
    const plan = firstStage(topic);
    await fakeRun(paths, "s1-baseline-seed1", "running", [0.4]);
    await fakeRun(paths, "s1-baseline-seed2", "succeeded", []);
    const { analysis } = await analyzeStage(topic, plan, [], paths);
    expect(analysis.outcomes[0]).toMatchObject({ state: "missing", reason: "not finished (state running)" });
    expect(analysis.outcomes[1]).toMatchObject({ state: "succeeded", score: undefined, reason: "no finite value of rollout_reward_mean was recorded" });
    expect(analysis.verdicts[0]).toMatchObject({ configurationId: "baseline", verdict: "inconclusive" });
    expect(analysis.verdicts[0]!.explanation).toMatch(/no run of baseline recorded a score \(2 run\(s\) failed, unfinished/);
  });
});

describe("analyzeStageResults (pure)", () => {
  const record = (step: number, value: number): MetricsRecord => makeMetricsRecord({ step, rollout_reward_mean: value });
  const flat = (id: string, value: number): RunRead => ({
    blueprintId: id,
    state: "succeeded",
    reason: undefined,
    records: [record(1, value), record(2, value)],
  });

  it("judges a refinement against the best of an earlier stage: supported beyond noise, refuted when worse", async () => {
    const loaded = await loadTopic(topicFile);
    // Three stages: the planner refines a separated winner only when a stage is left to replicate.
    const topic: Topic = { ...loaded.topic, budgets: { ...loaded.topic.budgets, stages: 3 } };
    const plan1 = firstStage(topic);
    const reads1 = [
      flat("s1-baseline-seed1", 0.5),
      flat("s1-baseline-seed2", 0.51),
      flat("s1-lr-0.05-seed1", 0.3),
      flat("s1-lr-0.05-seed2", 0.31),
      flat("s1-lr-0.5-seed1", 0.64),
      flat("s1-lr-0.5-seed2", 0.66),
    ];
    const stage1 = analyzeStageResults(topic, plan1, [], reads1, (id) => `/r/${id}`);
    const history = [{ plan: plan1, outcomes: stage1.outcomes }];
    const plan2 = firstStage(topic, history);
    expect(plan2.configurations.map((item) => item.id)).toEqual(["lr-0.316", "lr-1.25"]);
    const reads2 = [flat("s2-lr-0.316-seed1", 0.9), flat("s2-lr-0.316-seed2", 0.91), flat("s2-lr-1.25-seed1", 0.1), flat("s2-lr-1.25-seed2", 0.2)];
    const stage2 = analyzeStageResults(topic, plan2, history, reads2, (id) => `/r/${id}`);
    expect(stage2.verdicts.map((verdict) => [verdict.configurationId, verdict.verdict])).toEqual([
      ["lr-0.316", "supported"],
      ["lr-1.25", "refuted"],
    ]);
    expect(stage2.verdicts[0]!.explanation).toMatch(/better than lr-0\.5's mean 0\.65/);
    expect(stage2.best).toMatchObject({ id: "lr-0.316" });
  });
  it("clips intervals to the metric's range, compares the incumbent with every other, and renders the comparison", async () => {
    const loaded = await loadTopic(topicFile);
    const topic: Topic = { ...loaded.topic, metric: { ...loaded.topic.metric!, range: [0, 1], equivalence: 0.05 } };
    const plan = firstStage(topic);
    const reads = [
      flat("s1-baseline-seed1", 0.05),
      flat("s1-baseline-seed2", 0.95),
      flat("s1-lr-0.05-seed1", 0.1),
      flat("s1-lr-0.05-seed2", 0.11),
      flat("s1-lr-0.5-seed1", 0.7),
      flat("s1-lr-0.5-seed2", 0.72),
    ];
    const analysis = analyzeStageResults(topic, plan, [], reads, (id) => `/r/${id}`);
    const baseline = analysis.configurations.find((item) => item.id === "baseline")!;
    // Unclipped: 0.5 ± 12.706 * 0.45, far outside [0, 1].
    expect([baseline.low, baseline.high]).toEqual([0, 1]);
    expect(analysis.comparisons).toMatchObject({ incumbent: "lr-0.5" });
    expect(analysis.comparisons!.rows.map((row) => [row.otherId, row.verdict])).toEqual([
      ["baseline", "open"],
      ["lr-0.05", "worse"],
    ]);
    const { renderAnalysis } = await import("./analysis-markdown.ts");
    const text = renderAnalysis(analysis, topic, "/campaign");
    expect(text).toContain("## Against the incumbent (lr-0.5, every stage so far)");
    expect(text).toContain("equivalence margin 0.05 (two one-sided tests). Status: **open**.");
    expect(text).toMatch(
      /\| lr-0\.05 \| 0\.605 \| \[[0-9.]+, [0-9.]+\] \(98\.45%\) \|.*\| Welch, guarded by 2 matched seeds \(df 1\.471\) \|.*\| worse beyond seed noise \|/,
    );
  });
});
