import { describe, expect, it } from "vitest";
import { makeMetricsRecord, summarizeLedger } from "../../campaign/index.ts";
import { analyzeStageResults, type RunRead } from "../analysis/analyze-stage.ts";
import { formatNumber, makeConfiguration, summarizeConfigurations } from "../domain/configurations.ts";
import { judgeContrasts } from "../domain/contrast-verdicts.ts";
import { rankAgainstIncumbent } from "../domain/incumbent.ts";
import type { PlannedConfiguration, StagePlan, StageRecord } from "../domain/planner.ts";
import { parseQuestion } from "../domain/question.ts";
import { parseTopic, type KnobValue } from "../domain/topic.ts";
import { campaignRanking, currentLook } from "../planners/heuristic/heuristic-planner.ts";
import { comparisonCaption, comparisonCells } from "./comparison-table.ts";
import { renderReportMarkdown } from "./markdown.ts";
import { buildReportModel, type ReportRunFiles } from "./model.ts";
import { buildWriteup } from "./writeup-model.ts";
import { renderWriteupMarkdown } from "./writeup-render.ts";

/**
 * One difference, one verdict, one interval: the report shows the planner's test at the
 * campaign's last look. Here lr-0.2 beats the baseline by 0.02 to 0.04 at every one of four
 * shared seeds, while the seeds themselves spread the scores over 0.4 to 0.7: unpaired at a
 * fixed 0.05 (the report's old test) the two are within seed noise; paired by seed at the
 * look's level (the planner's) lr-0.2 is better beyond it.
 */
const time = "2026-12-02T10:00:00.000Z";
const topicText = `---
title: "Does a larger lr help?"
metric: { name: reward_mean, goal: maximize, score: final }
knobs:
  lr: [0.1, 0.2]
seeds: 4
budgets: { stages: 3, experiments: 16 }
---
Does a larger learning rate help?
`;
/** Each configuration's final score at each of its seeds. */
type Finals = Record<string, Record<number, number>>;
const pairedFinals: Finals = { baseline: { 1: 0.4, 2: 0.6, 3: 0.5, 4: 0.7 }, "lr-0.2": { 1: 0.43, 2: 0.62, 3: 0.54, 4: 0.72 } };

function planned(settings: Record<string, KnobValue>): PlannedConfiguration {
  const configuration = makeConfiguration(settings, { lr: 0.1 });
  return {
    ...configuration,
    hypothesis: "H1",
    prediction: { kind: "above-level", text: "reward_mean above 0", level: 0 },
    purpose: configuration.id === "baseline" ? "baseline" : "larger lr",
  };
}

function campaign(text: string, finals: Finals): { history: StageRecord[]; runs: Record<string, ReportRunFiles> } {
  const configurations = [planned({ lr: 0.1 }), planned({ lr: 0.2 })];
  const plan: StagePlan = {
    stage: 1,
    kind: "screen",
    rationale: "screen lr",
    hypotheses: [{ id: "H1", statement: "a larger lr learns better" }],
    configurations,
    experiments: configurations.flatMap((configuration) =>
      Object.keys(finals[configuration.id]!)
        .map(Number)
        .map((seed) => ({ blueprintId: `s1-${configuration.id}-seed${seed}`, configurationId: configuration.id, seed })),
    ),
    decisions: [{ outcome: "anything", decision: "report" }],
  };
  const runs: Record<string, ReportRunFiles> = {};
  for (const experiment of plan.experiments) {
    const final = finals[experiment.configurationId]![experiment.seed]!;
    const read: RunRead = {
      blueprintId: experiment.blueprintId,
      state: "succeeded",
      reason: undefined,
      records: [0, 1].map((step) => makeMetricsRecord({ step, reward_mean: step === 1 ? final : final / 2, time })),
    };
    runs[experiment.blueprintId] = { read, link: `results/${experiment.blueprintId}/result.md` };
  }
  const topic = parseTopic(text);
  const reads = plan.experiments.map((experiment) => runs[experiment.blueprintId]!.read);
  return { history: [{ plan, outcomes: analyzeStageResults(topic, plan, [], reads, (id) => `results/${id}`).outcomes }], runs };
}

function textOf(paragraph: (string | { strong: string })[]): string {
  return paragraph.map((run) => (typeof run === "string" ? run : `**${run.strong}**`)).join("");
}

describe("the report's statistics are the planner's at the campaign's last look", () => {
  it("shows the paired, look-level verdict and its interval in the answer, the table, the write-up and the method line", () => {
    const topic = parseTopic(topicText);
    const { history, runs } = campaign(topicText, pairedFinals);
    const summaries = summarizeConfigurations(history);
    const look = currentLook(topic, history);
    // Look 1 at half the budget: below 0.05 (Pocock-type spending).
    expect(look.look).toBe(1);
    expect(look.level).toBeGreaterThan(0.02);
    expect(look.level).toBeLessThan(0.05);
    // The old test and the planner's disagree on this history.
    expect(rankAgainstIncumbent(summaries, topic.metric!)!.status).toBe("open");
    expect(judgeContrasts(parseQuestion(topic).contrasts, summaries, topic.metric!).map((verdict) => verdict.answer)).toEqual(["not decided"]);
    const planner = campaignRanking(topic, history)!;
    expect(planner.status).toBe("separated");
    const row = planner.comparisons[0]!;
    expect(row).toMatchObject({ otherId: "baseline", verdict: "worse", matched: { seeds: 4, paired: true } });
    expect(row.pHolm!).toBeLessThan(look.level);
    expect(row.low!).toBeGreaterThan(0);
    const interval = `[${formatNumber(row.low)}, ${formatNumber(row.high)}]`;
    const level = `${formatNumber(row.level * 100)}%`;
    // At the look's level, a family of one: the interval's confidence is 1 − level.
    expect(row.level).toBeCloseTo(1 - look.level, 12);

    const model = buildReportModel({
      campaignId: "paired-look",
      topic,
      history,
      stop: { reason: "separated", explanation: "lr-0.2 is better than every other configuration beyond seed noise" },
      runs,
      ledger: summarizeLedger([]),
      ledgerProblems: 0,
      plannedStages: [1],
    });
    // The ranking and the contrast are the planner's: one verdict, one interval.
    expect(model.comparisons).toEqual({ incumbent: "lr-0.2", status: "separated", rows: planner.comparisons });
    expect(model.look).toEqual({ look: 1, information: look.information, level: look.level });
    const member = model.contrasts[0]!.members[0]!;
    expect(model.contrasts[0]!.answer).toBe("yes");
    expect(member).toMatchObject({ configurationId: "lr-0.2", verdict: "better", low: row.low, high: row.high, level: row.level, pHolm: row.pHolm });

    const [contrast, first] = model.answer.map(textOf);
    expect(contrast).toBe(
      `Larger lr vs the baseline lr=0.1: does it help? **Yes**: lr-0.2 is better than the baseline by 0.0275 in the mean (difference 0.0275, Holm-adjusted ${level} interval ${interval}, Holm p ${formatNumber(row.pHolm)}, 4 and 4 seed(s), paired on 4), better beyond seed noise.`,
    );
    expect(first).toContain(`lr-0.2 leads it by 0.0275 (Holm-adjusted ${level} interval ${interval};`);
    expect(first).toContain("Decided: lr-0.2 is better than each of the 1 other scored configuration(s) beyond seed noise.");
    expect(model.answer.map(textOf).join("\n")).not.toContain("What would settle it");

    expect(comparisonCells(model)).toEqual([
      [
        "baseline",
        "0.0275",
        `${interval} (${level})`,
        expect.any(String),
        "paired, 4 seeds (df 3)",
        formatNumber(row.p),
        formatNumber(row.pHolm),
        "n/a",
        "worse beyond seed noise",
      ],
    ]);
    expect(comparisonCaption(model, undefined)).toContain(`(look 1, level ${formatNumber(look.level)};`);
    expect(comparisonCaption(model, undefined)).not.toContain("0.05");

    // Stated once: the test, the level with its design, Holm over each family.
    expect(model.method).toContain("paired by seed (the paired t on their seed-matched differences) where they ran 4 or more of the same seeds");
    expect(model.method).toContain("(here 2 of the 2 comparison(s) paired)");
    expect(model.method).toContain(
      `each is held to the level of look 1 (at 50% of the experiment budget), ${formatNumber(look.level)}, of the campaign's group-sequential design`,
    );
    expect(model.method).toContain(
      "Holm's correction over each family (the best against each other configuration (1 comparison(s)); the question's contrasts against the baseline (1 comparison(s)))",
    );
    expect(model.method).toContain(`so it excludes 0 exactly when Holm p < ${formatNumber(look.level)}`);
    expect(model.method).not.toContain("unpaired");

    const markdown = renderReportMarkdown(model);
    expect(markdown).toContain(`| baseline | 0.0275 | ${interval} (${level}) |`);
    expect(markdown).not.toMatch(/within seed noise/);

    const writeup = renderWriteupMarkdown(buildWriteup({ model, topic, history, campaignRoot: "/campaign" }));
    expect(writeup).toContain(`Decided (at the level ${formatNumber(look.level)} of the campaign's last look, look 1, Holm-corrected):`);
    // Markdown escapes the brackets of a linked interval.
    expect(writeup).toContain(`[${interval.replace(/[[\]]/g, "\\$&")} (${level})](#cfg-baseline) | paired, 4 seeds (df 3) |`);
    expect(writeup).not.toContain("alpha 0.05");
  });

  it("holds a difference beyond seed noise at 0.05 but not at the look's level open, in the answer and the table alike", () => {
    // Three seeds each, different seeds on each side (nothing to pair): Welch at 0.05 would call it.
    const text3 = topicText.replace("seeds: 4", "seeds: 3");
    const topic = parseTopic(text3);
    const { history: shifted, runs } = campaign(text3, { baseline: { 1: 0.5, 2: 0.52, 3: 0.55 }, "lr-0.2": { 11: 0.56, 12: 0.58, 13: 0.6 } });
    const summaries = summarizeConfigurations(shifted);
    const look = currentLook(topic, shifted);
    const old = rankAgainstIncumbent(summaries, topic.metric!)!.comparisons[0]!;
    const planner = campaignRanking(topic, shifted)!.comparisons[0]!;
    expect(old.verdict).toBe("worse");
    expect(old.pHolm!).toBeLessThan(0.05);
    expect(planner.pHolm!).toBeGreaterThan(look.level);
    expect(planner.verdict).toBe("open");
    expect(planner.matched).toBeUndefined();
    expect(planner.low!).toBeLessThan(0);

    const model = buildReportModel({
      campaignId: "welch-look",
      topic,
      history: shifted,
      stop: { reason: "budget", explanation: "the experiment budget is spent" },
      runs,
      ledger: summarizeLedger([]),
      ledgerProblems: 0,
      plannedStages: [1],
    });
    expect(model.comparisons!.rows).toEqual([planner]);
    expect(model.contrasts[0]).toMatchObject({ answer: "not decided" });
    expect(model.contrasts[0]!.members[0]).toMatchObject({ verdict: "open", low: planner.low, high: planner.high, level: planner.level });
    const answer = model.answer.map(textOf).join("\n");
    expect(answer).toContain("**Not decided**");
    expect(answer).toContain(`Holm-adjusted ${formatNumber(planner.level * 100)}% interval [${formatNumber(planner.low)}, ${formatNumber(planner.high)}]`);
    expect(comparisonCells(model)[0]!.at(-1)).toBe("open");
    expect(comparisonCells(model)[0]![4]).toMatch(/^Welch \(df /);
    expect(model.method).toContain("(here 0 of the 2 comparison(s) paired, 2 Welch)");
  });

  it("judges a stage's 'beats' prediction by the planner's test at the look: paired by seed, at the look's level", () => {
    const topic = parseTopic(topicText);
    const { history } = campaign(topicText, pairedFinals);
    const plan: StagePlan = {
      ...history[0]!.plan,
      configurations: history[0]!.plan.configurations.map((configuration) =>
        configuration.id === "lr-0.2"
          ? { ...configuration, prediction: { kind: "beats-configuration", configurationId: "baseline", text: "lr-0.2 beats the baseline" } }
          : configuration,
      ),
    };
    const reads: RunRead[] = plan.experiments.map((experiment) => ({
      blueprintId: experiment.blueprintId,
      state: "succeeded",
      reason: undefined,
      records: [0, 1].map((step) => {
        const final = pairedFinals[experiment.configurationId]![experiment.seed]!;
        return makeMetricsRecord({ step, reward_mean: step === 1 ? final : final / 2, time });
      }),
    }));
    const analysis = analyzeStageResults(topic, plan, [], reads, (id) => `results/${id}`);
    const level = currentLook(topic, [{ plan, outcomes: analysis.outcomes }]).level;
    const verdict = analysis.verdicts.find((item) => item.configurationId === "lr-0.2")!;
    expect(verdict.verdict).toBe("supported");
    expect(verdict.explanation).toContain(`paired by seed on 4 seeds, one-sided p`);
    expect(verdict.explanation).toContain(`at this look's level ${formatNumber(level)}`);
    // Unpaired, the seeds' spread hides the same difference.
    const unpaired = rankAgainstIncumbent(summarizeConfigurations([{ plan, outcomes: analysis.outcomes }]), topic.metric!, level)!.comparisons[0]!;
    expect(unpaired.p! / 2).toBeGreaterThan(level);
  });
});
