import { readdir } from "node:fs/promises";
import { relative, sep } from "node:path";
import { readEvents, readLedger, resultDirPaths, summarizeLedger } from "../../campaign/index.ts";
import type { CampaignEvent, CampaignPaths } from "../../campaign/index.ts";
import { writeRedactedFile } from "../../core/redact.ts";
import { pathExists } from "../../core/path-exists.ts";
import { readStoredAnswer } from "../record/stored-answers.ts";
import { analyzeStageResults, readStageRuns } from "../analysis/analyze-stage.ts";
import type { Conclusion, ExperimentOutcome, FramedQuestion, StageRecord } from "../domain/planner.ts";
import { renderReportHtml } from "./html.ts";
import { renderReportMarkdown } from "./markdown.ts";
import { buildReportModel, type CampaignReportModel, type ReportRunFiles } from "./model.ts";
import { readStagePlan } from "../record/stage-plan-file.ts";
import { answerKeyIn, eventsOfCurrentRound, openRoundOf } from "../record/reopen.ts";
import type { Topic } from "../domain/topic.ts";
import { earlierCampaignsOnBase } from "../history/earlier-campaigns.ts";

/**
 * The campaign's final report, `report.md` and `report.html`, from the history the graph
 * holds (or `historyFromFiles` rebuilds) plus what the files say now: the result
 * directories (curves, links), the ledger (GPU-hours, LLM spending per role) and the stage
 * plans (stages planned but not analyzed). Numbers come from the computed analysis only;
 * a model's conclusion is shown beside them with each claim checked against the
 * experiment ids of the campaign.
 */
export interface CampaignReportInput {
  paths: CampaignPaths;
  topic: Topic;
  history: StageRecord[];
  stop: { reason: string; explanation: string } | null;
  framing?: FramedQuestion;
  conclusion?: Conclusion;
}

export type CampaignStop = { reason: string; explanation: string } | null;

/** Writes report.md and report.html (each atomically) and returns their text. */
export async function writeCampaignReport(input: CampaignReportInput): Promise<{ markdown: string; html: string }> {
  const model = await campaignReportModel(input);
  const markdown = await writeRedactedFile(input.paths.report, renderReportMarkdown(model));
  const html = await writeRedactedFile(input.paths.reportHtml, renderReportHtml(model));
  return { markdown, html };
}

/** The report's figures from the history and the files (result directories, ledger, plans, events). */
export async function campaignReportModel(input: CampaignReportInput): Promise<CampaignReportModel> {
  const { paths } = input;
  const runs: Record<string, ReportRunFiles> = {};
  for (const record of input.history) {
    for (const read of await readStageRuns(paths, record.plan)) runs[read.blueprintId] = { read, link: await linkOf(paths, read.blueprintId) };
  }
  const ledger = await readLedger(paths.ledger);
  const reopenings = (await readEvents(paths.events)).events
    .filter((event) => event.kind === "campaign.reopened")
    .map((event) => {
      const explanation = (event.after as { explanation?: unknown } | undefined)?.explanation;
      return { time: event.time, ...(typeof explanation === "string" ? { after: explanation } : {}) };
    });
  return buildReportModel({
    campaignId: paths.id,
    topic: input.topic,
    history: input.history,
    stop: input.stop,
    ...(input.framing ? { framing: input.framing } : {}),
    ...(input.conclusion ? { conclusion: input.conclusion } : {}),
    runs,
    ledger: summarizeLedger(ledger.entries),
    ledgerProblems: ledger.problems.length,
    plannedStages: await plannedStageNumbers(paths),
    reopenings,
    earlierCampaigns: await earlierCampaignsOnBase(paths),
  });
}

/**
 * The history and stop decision rebuilt from files alone (for `a3r report`): every stage
 * plan (`stages/<n>/plan.md`) that was analyzed (a `stage.analyzed` event) or has at least
 * one result directory, re-analyzed from its result directories in stage order; the stop
 * is the last `campaign.stop_decided` (or `stage.audit_failed`) event, null without one.
 */
export async function historyFromFiles(paths: CampaignPaths, topic: Topic): Promise<{ history: StageRecord[]; stop: CampaignStop }> {
  const { events } = await readEvents(paths.events);
  const analyzed = new Set(events.filter((event) => event.kind === "stage.analyzed" && typeof event.stage === "number").map((event) => event.stage as number));
  const history: StageRecord[] = [];
  for (const stage of await plannedStageNumbers(paths)) {
    const plan = await readStagePlan(paths, stage);
    const reads = await readStageRuns(paths, plan);
    if (!analyzed.has(stage) && reads.every((read) => read.state === "missing")) continue;
    const outcomes: ExperimentOutcome[] = topic.metric
      ? analyzeStageResults(topic, plan, history, reads, (id) => paths.result(id)).outcomes
      : reads.map((read) => {
          const experiment = plan.experiments.find((item) => item.blueprintId === read.blueprintId)!;
          const state = ["succeeded", "failed", "timed_out", "cancelled", "stopped_early"].includes(read.state)
            ? (read.state as ExperimentOutcome["state"])
            : "missing";
          return {
            blueprintId: read.blueprintId,
            configurationId: experiment.configurationId,
            seed: experiment.seed,
            state,
            score: undefined,
            ...(read.reason === undefined ? {} : { reason: read.reason }),
          };
        });
    history.push({ plan, outcomes });
  }
  return { history, stop: stopFromEvents(events) };
}

/**
 * `a3r report`: the report again from files alone. The planner's framing and conclusion
 * are the answers the leader stored (`leader-answers/`), so no model is called.
 */
export async function rewriteCampaignReport(paths: CampaignPaths, topic: Topic): Promise<{ markdown: string; html: string }> {
  return writeCampaignReport(await reportInputFromFiles(paths, topic));
}

/** What the report is built from, read from the campaign's files alone (no model is called). */
export async function reportInputFromFiles(paths: CampaignPaths, topic: Topic): Promise<CampaignReportInput> {
  const { history, stop } = await historyFromFiles(paths, topic);
  const round = openRoundOf((await readEvents(paths.events)).events);
  const framing = await latestStoredAnswer<FramedQuestion>(paths, "frame", round);
  // The conclusion is about the round's own stop: an earlier round's is never shown.
  const conclusion = await readStoredAnswer<Conclusion>(paths, answerKeyIn("conclude", round));
  return { paths, topic, history, stop, ...(framing ? { framing } : {}), ...(conclusion ? { conclusion } : {}) };
}

/** The answer stored under `key` in the latest open round that has one (leader/record/reopen.ts). */
async function latestStoredAnswer<T>(paths: CampaignPaths, key: string, round: number): Promise<T | undefined> {
  for (let at = round; at >= 0; at -= 1) {
    const answer = await readStoredAnswer<T>(paths, answerKeyIn(key, at));
    if (answer !== undefined) return answer;
  }
  return undefined;
}

/** The campaign's stop as the graph decided it: the last stop or audit-failure event. */
export function stopFromEvents(allEvents: CampaignEvent[]): CampaignStop {
  // A stop before the campaign's last re-opening is no longer its stop.
  const events = eventsOfCurrentRound(allEvents);
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.kind === "campaign.stop_decided" && typeof event.reason === "string") {
      return { reason: event.reason, explanation: typeof event.explanation === "string" ? event.explanation : "" };
    }
    if (event.kind === "stage.audit_failed") {
      const findings = Array.isArray(event.findings) ? (event.findings as { blueprintId?: unknown; line?: unknown; message?: unknown }[]) : [];
      const first = findings[0];
      const where = first ? `, first: ${String(first.blueprintId)}:${String(first.line)} ${String(first.message)}` : "";
      return {
        reason: "audit-failed",
        explanation: `stage ${String(event.stage)}: ${findings.length}${findings.length >= 20 ? " or more" : ""} blueprint error(s)${where}`,
      };
    }
  }
  return null;
}

/** Stage numbers with a plan.md, ascending. */
export async function plannedStageNumbers(paths: CampaignPaths): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(paths.stages);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  // Only canonical numbers: "01" is not the folder `paths.stage(1)` names.
  const stages = names.filter((name) => /^(0|[1-9]\d*)$/.test(name)).map(Number);
  const planned: number[] = [];
  for (const stage of stages) if (await pathExists(paths.stage(stage).plan)) planned.push(stage);
  return planned.sort((left, right) => left - right);
}

/** A link from the campaign folder to the run's result.md, else its status.json, else none. */
async function linkOf(paths: CampaignPaths, blueprintId: string): Promise<string | undefined> {
  const files = resultDirPaths(paths.result(blueprintId));
  for (const file of [files.result, files.status]) {
    if (await pathExists(file)) return relative(paths.root, file).split(sep).join("/");
  }
  return undefined;
}
