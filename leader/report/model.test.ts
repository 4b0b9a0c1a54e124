import { describe, expect, it } from "vitest";
import { makeMetricsRecord, summarizeLedger, type LedgerEntry } from "../../campaign/index.ts";
import { analyzeStageResults, type RunRead } from "../analysis/analyze-stage.ts";
import type { Conclusion, StageRecord } from "../domain/planner.ts";
import { reportFixturePlans, reportFixtureRuns, reportFixtureTopicText } from "../../test-support/report-fixtures.ts";
import { renderReportHtml } from "./html.ts";
import { renderReportMarkdown } from "./markdown.ts";
import { buildReportModel, meanCurve, type ReportInputs, type ReportRunFiles } from "./model.ts";
import { parseTopic } from "../domain/topic.ts";

const time = "2026-11-29T10:00:00.000Z";

function runsOf(): Record<string, ReportRunFiles> {
  return Object.fromEntries(
    reportFixtureRuns().map((run) => {
      const read: RunRead = {
        blueprintId: run.blueprintId,
        state: run.state,
        reason: run.reason,
        records: run.records.map((record) => makeMetricsRecord({ ...record, time })),
      };
      return [run.blueprintId, { read, link: `results/${run.blueprintId}/result.md` }];
    }),
  );
}

/** The history as the graph builds it: each stage analyzed with the stages before it. */
function historyOf(topicText: string, runs: Record<string, ReportRunFiles>): StageRecord[] {
  const topic = parseTopic(topicText);
  const history: StageRecord[] = [];
  for (const plan of reportFixturePlans()) {
    const reads = plan.experiments.map((experiment) => runs[experiment.blueprintId]!.read);
    history.push({ plan, outcomes: analyzeStageResults(topic, plan, history, reads, (id) => `results/${id}`).outcomes });
  }
  return history;
}

const ledgerEntries: LedgerEntry[] = [
  {
    time,
    kind: "llm",
    role: "plan",
    provider: "scripted",
    model: "m",
    inputTokens: 1000,
    outputTokens: 200,
    cachedTokens: 100,
    costUsd: 0.012,
    durationMs: 900,
    ok: true,
  },
  {
    time,
    kind: "llm",
    role: "plan",
    provider: "scripted",
    model: "m",
    inputTokens: 500,
    outputTokens: 0,
    cachedTokens: 0,
    costUsd: 0,
    durationMs: 50,
    ok: false,
    errorCode: "LLM_TIMEOUT",
  },
  {
    time,
    kind: "llm",
    role: "analyze",
    provider: "scripted",
    model: "m",
    inputTokens: 300,
    outputTokens: 100,
    cachedTokens: 0,
    costUsd: 0.003,
    durationMs: 400,
    ok: true,
  },
  { time, kind: "gpu", blueprintId: "s1-baseline-seed1", host: "gpu-a", gpus: 2, hours: 0.5 },
  { time, kind: "gpu", blueprintId: "s1-lr-1-seed1", host: "gpu-b", gpus: 1, hours: 0.25 },
];

function inputs(overrides: Partial<ReportInputs> = {}): ReportInputs {
  const topicText = reportFixtureTopicText();
  const runs = runsOf();
  return {
    campaignId: "report-unit",
    topic: parseTopic(topicText),
    history: historyOf(topicText, runs),
    stop: { reason: "no-improvement", explanation: "no configuration of stage 2 beats lr-0.03's mean." },
    runs,
    ledger: summarizeLedger(ledgerEntries),
    ledgerProblems: 0,
    plannedStages: [1, 2],
    ...overrides,
  };
}

describe("buildReportModel", () => {
  it("answers with the measured best, its interval and its comparison with the baseline, all computed", () => {
    const model = buildReportModel(inputs());
    expect(model.bestId).toBe("lr-0.03");
    const best = model.configurations.find((row) => row.id === "lr-0.03")!;
    // Seeds 1 and 2 scored 0.78 and 0.80 (seed 3 failed): mean 0.79, t(1) = 12.706, se = 0.01.
    expect(best).toMatchObject({ n: 2, failed: 1, isBest: true });
    expect(best.mean).toBeCloseTo(0.79, 9);
    expect(best.low).toBeCloseTo(0.79 - 0.127062047, 6);

    const answer = model.answer.map((paragraph) => paragraph.map((run) => (typeof run === "string" ? run : `**${run.strong}**`)).join("")).join("\n");
    expect(answer).toContain(
      "The best configuration measured is **lr-0.03** (lr=0.03): final reward_mean mean 0.79 over 2 seed(s), 95% interval [0.6629, 0.9171].",
    );
    // The first paragraph answers: runner-up with the effect and its interval, the decision, the compute.
    expect(answer).toContain(
      "The runner-up is lr-1 (mean 0.52, 3 seed(s)): lr-0.03 leads it by 0.27 (Holm-adjusted 98.94% interval [0.1789, 0.3611]; Hedges' g 10.76 [1.752, 19.76]; Holm p 8.126e-4), beyond seed noise.",
    );
    expect(answer).toContain("Decided: lr-0.03 is better than each of the 3 other scored configuration(s) beyond seed noise.");
    expect(answer).toContain("Compute spent: 12 run(s) over 2 stage(s) (1 not scored), 1.25 GPU-hours.");
    expect(answer.split("\n")[0]).toMatch(/^The best configuration measured is .*Compute spent/);
    expect(answer).not.toContain("What would settle it");
    expect(answer).toContain("Against the baseline (mean 0.5, 95% interval [0.4503, 0.5497]), its mean differs by 0.29 (58%), beyond seed noise");
    expect(answer).toContain("Stopped: no-improvement: no configuration of stage 2 beats lr-0.03's mean.");
  });

  it("computes the caveats: the failed run with its reason, few seeds, the stop reason, stages not analyzed", () => {
    const model = buildReportModel(inputs({ plannedStages: [1, 2, 3] }));
    const text = model.caveats.join("\n");
    expect(text).toContain(
      "1 of 12 experiment(s) are not counted in the scores: s2-lr-0.03-seed3 (failed: out of memory: CUDA out of memory <tried to allocate 2 GiB>)",
    );
    // Counted on the best (lr-0.03: 2 scored seeds, 1 failed), not on the thinnest configuration.
    expect(text).toContain("Few seeds: the best configuration, lr-0.03, has 2 scored seed(s); its 95% interval is the mean ± 12.706 standard errors");
    expect(text).toContain("the answer is the best configuration measured, not a proven optimum");
    expect(text).toContain("Stage(s) 3 were planned");
    expect(text).not.toMatch(/overlaps/);
  });

  it("answers a yes/no question in its own terms first: yes, with the effect and its Holm-adjusted interval", () => {
    const text = reportFixtureTopicText().replace("Which learning rate gives the best final reward_mean?", "Does a smaller learning rate help?");
    const model = buildReportModel({ ...inputs(), topic: parseTopic(text) });
    const first = model.answer[0]!.map((run) => (typeof run === "string" ? run : `**${run.strong}**`)).join("");
    expect(first).toMatch(
      /^Smaller lr vs the baseline lr=0\.1: does it help\? \*\*Yes\*\*: lr-0\.03 is better than the baseline by 0\.29 in the mean \(difference 0\.29, Holm-adjusted [\d.]+% interval \[0\.2\d*, 0\.3\d*\], Holm p [\d.e-]+, 2 and 3 seed\(s\)\), better beyond seed noise\. Also: lr-0\.01 worse beyond seed noise/,
    );
    expect(model.contrasts.map((verdict) => verdict.answer)).toEqual(["yes"]);
    expect(model.method).toContain("the question's contrasts against the baseline (2 comparison(s))");
    // A "which" question has no contrast: the best configuration answers it.
    expect(buildReportModel(inputs()).contrasts).toEqual([]);
  });

  it("draws each configuration in one colour across every chart: its place among all the campaign's configurations", () => {
    const model = buildReportModel(inputs());
    // lr-0.03 is the 4th configuration of the campaign, and the only one of stage 2.
    expect(model.curves[1]!.series.map((series) => [series.name, series.colorIndex])).toEqual([["lr-0.03", 3]]);
    expect(model.curves[0]!.series.map((series) => series.colorIndex)).toEqual([0, 1, 2]);
    const html = renderReportHtml(model);
    const stage2 = html.slice(html.indexOf('data-stage="2"'));
    expect(stage2).toMatch(/<path class="series" data-name="lr-0\.03" d="[^"]+" fill="none" stroke="#d62728"/);
  });

  it("names the configurations whose intervals overlap the best's, and a budget stop", () => {
    const base = inputs();
    // Only stage 1: baseline (0.5) is best-but-one, lr-1 (0.52) best, and their intervals overlap.
    const model = buildReportModel({
      ...base,
      history: base.history.slice(0, 1),
      plannedStages: [1],
      stop: { reason: "budget", explanation: "stage 2 would exceed the budget of 1 stage(s)" },
    });
    expect(model.bestId).toBe("lr-1");
    const text = model.caveats.join("\n");
    expect(text).toMatch(/lr-1 is not separated from baseline \(mean 0\.5\)/);
    expect(text).toContain("Stopped by a budget (stage 2 would exceed the budget of 1 stage(s)): the search did not reach its own end");
    const answer = model.answer.flat().join("");
    expect(answer).toContain("within seed noise");
    expect(answer).toContain("Not decided: lr-1 is not separated from baseline (and with no equivalence margin declared, a tie cannot be shown).");
    // What would settle it, sized as the planner sizes it: the two share their seeds, and the
    // fixture's seed offsets are common to both, so on seed-matched differences a fourth seed
    // (the first compared paired) would do.
    expect(answer).toContain(
      "What would settle it: 1 more seed(s) run on both lr-1 and baseline (4 shared seeds, compared paired) would separate a 0.02 difference with 80% power",
    );
  });

  it("clips intervals to the metric's range, states a tie within the margin, and flags extrapolations", () => {
    const topic = parseTopic(
      "---\nmetric: { name: reward_mean, goal: maximize, range: [0, 1], equivalence: 0.05 }\nbase: { codebase: /c, interpreter: /usr/bin/node, command: run, gpus: 0 }\nknobs: { lr: [0.2, 0.5] }\n---\nq",
    );
    const configuration = (id: string, lr: number, extrapolation?: string) => ({
      id,
      settings: { lr },
      delta: (id === "baseline" ? {} : { lr }) as Record<string, number>,
      hypothesis: "H1",
      purpose: "p",
      prediction: { kind: "records" as const, text: "records" },
      ...(extrapolation ? { extrapolation } : {}),
    });
    const scores: Record<string, number[]> = { baseline: [0.97, 0.98, 0.975, 0.972], "lr-0.5": [0.99, 0.975, 0.98, 0.985], "lr-1.25": [0.2, 0.9, 0.95, 0.1] };
    const plan = {
      stage: 1,
      kind: "screen" as const,
      rationale: "r",
      hypotheses: [],
      configurations: [
        configuration("baseline", 0.2),
        configuration("lr-0.5", 0.5),
        configuration("lr-1.25", 1.25, "lr=1.25 lies outside the tried range 0.2–0.5: an extrapolation"),
      ],
      experiments: Object.entries(scores).flatMap(([id, values]) =>
        values.map((_, index) => ({ blueprintId: `s1-${id}-seed${index + 1}`, configurationId: id, seed: index + 1 })),
      ),
      decisions: [],
    };
    const outcomes = plan.experiments.map((experiment) => ({
      ...experiment,
      state: "succeeded" as const,
      score: scores[experiment.configurationId]![experiment.seed - 1]!,
    }));
    const model = buildReportModel({
      ...inputs(),
      topic,
      history: [{ plan, outcomes }],
      stop: { reason: "equivalent", explanation: "tied" },
      runs: {},
      plannedStages: [1],
    });
    const wide = model.configurations.find((row) => row.id === "lr-1.25")!;
    // Unclipped, its 95% interval is about [-0.21, 1.29]: a reward in [0, 1] cannot have such a mean.
    expect([wide.low, wide.high]).toEqual([0, 1]);
    const answer = model.answer.flat().join("");
    expect(answer).toContain("The same as lr-0.5 within 0.05: baseline.");
    expect(answer).toContain(
      "Extrapolated beyond the tested range (flagged in the stage plans): lr-1.25 in stage 1 (lr=1.25 lies outside the tried range 0.2–0.5: an extrapolation).",
    );
    expect(model.comparisons?.rows.find((row) => row.otherId === "baseline")?.verdict).toBe("equivalent");
    expect(model.caveats.join("\n")).not.toContain("Stopped early");
  });

  it("notes a result directory whose score changed after its analysis, and keeps the analysis figure", () => {
    const base = inputs();
    const runs = { ...base.runs };
    const changed = runs["s1-baseline-seed1"]!;
    runs["s1-baseline-seed1"] = {
      ...changed,
      read: { ...changed.read, records: [...changed.read.records, makeMetricsRecord({ step: 5, time, reward_mean: 0.9 })] },
    };
    const model = buildReportModel({ ...base, runs });
    expect(model.caveats.join("\n")).toContain(
      "The result directory of s1-baseline-seed1 changed after its stage was analyzed: the analysis scored it 0.48, its files now give 0.9",
    );
    expect(model.experiments.find((row) => row.blueprintId === "s1-baseline-seed1")!.score).toBe(0.48);
  });

  it("draws one curve per configuration per stage, the mean over its succeeded runs at each step", () => {
    const model = buildReportModel(inputs());
    expect(model.curves.map((curves) => curves.series.map((series) => series.name))).toEqual([["baseline", "lr-0.01", "lr-1"], ["lr-0.03"]]);
    expect(model.curves.map((curves) => curves.runs)).toEqual([[3, 3, 3], [2]]);
    const baseline = model.curves[0]!.series[0]!;
    expect(baseline.points.map((point) => point.x)).toEqual([0, 1, 2, 3, 4]);
    expect(baseline.points[4]!.y).toBeCloseTo(0.5, 9);
    // The failed seed (steps 0 and 1 only) is left out, as it is from the score.
    const refined = model.curves[1]!.series[0]!;
    expect(refined.points[0]!.y).toBeCloseTo(0.79 / 5, 9);
    expect(refined.points[4]!.y).toBeCloseTo(0.79, 9);
  });

  it("totals GPU-hours and LLM spending per role from the ledger", () => {
    const model = buildReportModel(inputs());
    expect(model.costs.gpuHours).toBeCloseTo(1.25, 9);
    expect(model.costs.byHost).toEqual([
      { host: "gpu-a", gpuHours: 1 },
      { host: "gpu-b", gpuHours: 0.25 },
    ]);
    expect(model.costs.llmByRole.map((row) => [row.role, row.calls, row.failedCalls, row.inputTokens])).toEqual([
      ["plan", 2, 1, 1500],
      ["analyze", 1, 0, 300],
    ]);
    expect(model.costs.llmTotal.costUsd).toBeCloseTo(0.015, 9);
    // The time the model calls took, per role and in all (ledger durationMs 900 + 50, and 400).
    expect(model.costs.llmByRole.map((row) => [row.role, row.durationMs])).toEqual([
      ["plan", 950],
      ["analyze", 400],
    ]);
    expect(renderReportMarkdown(model)).toContain("| plan | 2 | 1 | 1500 |");
    expect(renderReportMarkdown(model)).toMatch(/\| \*\*total\*\* \| 3 \| 1 \| 1800 \| .* \| 0\.0150 \| 1\.4 \|/);
    expect(renderReportHtml(model)).toContain("<th>time (s)</th>");
    expect(model.experiments.find((row) => row.blueprintId === "s1-baseline-seed1")!.gpuHours).toBe(1);
  });

  it("checks the model's conclusion: a claim citing an unknown id or none is flagged, in both files", () => {
    const conclusion: Conclusion = {
      answer: "lr 0.03 is best.",
      claims: [
        { text: "lr-0.03 beats the baseline", experimentIds: ["s2-lr-0.03-seed1", "s1-baseline-seed1"] },
        { text: "lr 3 would be even better", experimentIds: ["s3-lr-3-seed1"] },
        { text: "the GPU was warm", experimentIds: [] },
      ],
      caveats: ["two seeds only"],
    };
    const model = buildReportModel(inputs({ conclusion }));
    expect(model.conclusion!.claims.map((claim) => claim.status)).toEqual(["grounded", "flagged", "flagged"]);
    expect(model.caveats.join("\n")).toContain("2 claim(s) of the model-written conclusion are not supported by any experiment of this campaign");
    const markdown = renderReportMarkdown(model);
    expect(markdown).toContain(
      "- **FLAGGED: not supported by any experiment of this campaign** (cites s3-lr-3-seed1, which is not an experiment of this campaign): lr 3 would be even better",
    );
    const html = renderReportHtml(model);
    expect(html.match(/<li class="claim flagged">/g)).toHaveLength(2);
    expect(html).toContain("Flagged: not supported by any experiment of this campaign</span> (cites no experiment): the GPU was warm");
  });
});

describe("the rendered report", () => {
  it("keeps text from files and models inert in HTML and markdown", () => {
    const hostile = '<script>alert("x")</script>';
    const base = inputs();
    const model = buildReportModel({
      ...base,
      topic: parseTopic(reportFixtureTopicText(`lr ${hostile}`)),
      stop: { reason: "stage-failed", explanation: `<img src=x onerror=alert(1)> | pipe` },
      conclusion: { answer: hostile, claims: [{ text: `<a href="https://example.com">x</a>`, experimentIds: ["s1-baseline-seed1"] }], caveats: [] },
    });
    const html = renderReportHtml(model);
    expect(html).not.toMatch(/<script|<img|<a href="https:/i);
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect(html).not.toMatch(/(href|src)="https?:/);
    const markdown = renderReportMarkdown(model);
    expect(markdown).not.toMatch(/<script|<img|<a /i);
    expect(markdown).toContain("&lt;img src=x onerror=alert(1)&gt;");
  });

  it("has the same sections in both files, links every experiment, and embeds the charts in the HTML", () => {
    const model = buildReportModel(inputs());
    const markdown = renderReportMarkdown(model);
    const html = renderReportHtml(model);
    for (const heading of ["Question", "Answer", "Caveats", "Score per configuration", "Against the best", "Predictions", "Experiments", "Costs"]) {
      expect(markdown).toContain(`## ${heading}`);
      expect(html).toContain(`<h2>${heading}</h2>`);
    }
    expect(markdown).toMatch(
      /\| lr-1 \| 0\.27 \| \[0\.1789, 0\.3611\] \(98\.94%\) \| 10\.76 \[1\.752, 19\.76\] \| Welch, guarded by 2 matched seeds \(df 2\.882\) \|/,
    );
    expect(markdown).toContain("[s2-lr-0.03-seed3](results/s2-lr-0.03-seed3/result.md)");
    expect(html.match(/<a href="results\/[^"]+\/result\.md">/g)).toHaveLength(12);
    expect(html.match(/<figure class="chart"/g)).toHaveLength(3);
    expect(html.match(/<circle class="estimate"/g)).toHaveLength(4);
    expect(markdown).toMatch(/\| \*\*lr-0\.03\*\* \(best\) \| lr=0\.03 \| 2 \| 2 \| 1 \| 0\.79 \| \[0\.6629, 0\.9171\] \| 0\.78, 0\.8 \|/);
    expect(html).not.toContain("<script");
  });

  it("says plainly when nothing was scored", () => {
    const base = inputs();
    const history = base.history.map((record) => ({
      ...record,
      outcomes: record.outcomes.map((outcome) => ({ ...outcome, state: "failed" as const, score: undefined, reason: "killed" })),
    }));
    const model = buildReportModel({ ...base, history, stop: { reason: "stage-failed", explanation: "no experiment of stage 1 recorded a score" } });
    expect(model.bestId).toBeUndefined();
    expect(renderReportMarkdown(model)).toContain("No configuration produced a score, so the question is not answered.");
    expect(model.caveats.join("\n")).toContain("Stopped early (stage-failed): no experiment of stage 1 recorded a score.");
  });
});

describe("meanCurve", () => {
  it("averages each step over the runs that recorded it", () => {
    const curves = [
      new Map([
        [0, 1],
        [1, 2],
      ]),
      new Map([
        [0, 3],
        [2, 5],
      ]),
    ];
    expect(meanCurve(curves)).toEqual([
      { x: 0, y: 2 },
      { x: 1, y: 2 },
      { x: 2, y: 5 },
    ]);
  });
});
