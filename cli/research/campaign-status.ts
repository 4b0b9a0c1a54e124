import { campaignTopic } from "./campaign-topic.ts";
import { basename } from "node:path";
import { campaignPaths, listCampaigns, listStages, loadCampaign, readEvents, readLedger, readResultDir, summarizeLedger } from "../../campaign/index.ts";
import { renderSpendingByRole } from "../../campaign/index.ts";
import type { CampaignEvent } from "../../campaign/index.ts";
import { formatTable } from "../views/run-table.ts";
import { eventsOfCurrentRound, formatNumber, parseTopic, reviewAnswerEvent } from "../../leader/index.ts";
import { isLeaderRunning } from "./leader-mark.ts";

/**
 * What `a3r status` shows, read from the campaign folders only (events.jsonl, stage
 * folders, result directories), never from the leader's checkpoint, so it works while a
 * leader runs and after one was killed.
 *
 * A campaign paused for review is "waiting": its last `review.requested` has no answer
 * (`review.approved` or `review.instructed` with the same stage, point and round).
 */
export type CampaignState = "running" | "finished" | "stopped" | "waiting";

export interface PendingReview {
  stage: number;
  at: string;
  round: number;
  files: string[];
  reason: string;
  commands: string[];
}

export interface CampaignSummary {
  id: string;
  title: string;
  stages: number;
  experiments: number;
  state: CampaignState;
  /** The best mean so far over every stage, with its seed count when the events record it. */
  best: { id: string; mean: number; n?: number } | null;
  stop: { reason: string; explanation: string } | null;
  report: string | null;
  /** What a waiting campaign needs from a person. */
  waitingFor: PendingReview | null;
}

export interface ExperimentStatus {
  blueprintId: string;
  state: string;
  step: number | null;
  metric: number | null;
  reason: string | null;
}

export interface CampaignDetail extends CampaignSummary {
  metric: string | null;
  /** From the campaign ledger: GPU-hours booked and model calls per role. */
  costs: { gpuHours: number; llmCalls: number; llmTokens: number; llmUsd: number; byRoleTable: string };
  stageDetails: { stage: number; experiments: ExperimentStatus[] }[];
}

export async function summarizeCampaign(runsDir: string, id: string): Promise<CampaignSummary> {
  const campaign = await loadCampaign(runsDir, id);
  const { events } = await readEvents(campaign.paths.events);
  // A re-opened campaign is finished again only once its current round has reported.
  const reported = lastOf(eventsOfCurrentRound(events), "campaign.reported");
  const goal = goalOf(campaign.topic, campaign.paths.topic);
  const stop = reported ? asStop(reported.stop) : null;
  const waitingFor = reported ? null : pendingReview(events);
  const state: CampaignState = reported ? "finished" : waitingFor ? "waiting" : (await isLeaderRunning(runsDir, id)) ? "running" : "stopped";
  return {
    id,
    title: titleOf(campaign.topic, campaign.paths.topic),
    stages: campaign.stages.length,
    experiments: campaign.stages.reduce((total, stage) => total + stage.blueprintFiles.length, 0),
    state,
    best: bestAcrossStages(events, goal),
    stop,
    report: reported && typeof reported.report === "string" ? reported.report : null,
    waitingFor,
  };
}

/** The last review request that has no answer in the log, if any. */
export function pendingReview(events: readonly CampaignEvent[]): PendingReview | null {
  const requested = lastOf([...events], "review.requested");
  if (!requested) return null;
  if (reviewAnswerEvent(events, { stage: requested.stage, at: requested.at, round: requested.round })) return null;
  const strings = (value: unknown) => (Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []);
  return {
    stage: Number(requested.stage),
    at: String(requested.at),
    round: Number(requested.round),
    files: strings(requested.files),
    reason: typeof requested.reason === "string" ? requested.reason : "",
    commands: strings(requested.commands),
  };
}

/** What to tell a person about a paused campaign: what to read and how to answer. */
export function describeWaiting(id: string, waiting: PendingReview, runsDirFlag = ""): string[] {
  const what = waiting.at === "plan" ? `the plan of stage ${waiting.stage}` : `the blueprints of stage ${waiting.stage}`;
  const lines = [`waiting for review of ${what} (${waiting.reason})`];
  for (const file of waiting.files) lines.push(`  read: ${file}`);
  for (const command of waiting.commands) lines.push(`  command to approve: ${command}`);
  lines.push(
    `  approve: a3r resume ${id}${runsDirFlag} --approve`,
    `  or send it back to planning: a3r resume ${id}${runsDirFlag} --instruct "what to change"`,
  );
  return lines;
}

export async function listCampaignSummaries(runsDir: string): Promise<CampaignSummary[]> {
  const listings = await listCampaigns(runsDir);
  return Promise.all(listings.map((listing) => summarizeCampaign(runsDir, listing.id)));
}

/** The summary plus, per stage, each experiment's state, step and last value of the topic's metric. */
export async function describeCampaign(runsDir: string, id: string): Promise<CampaignDetail> {
  const summary = await summarizeCampaign(runsDir, id);
  const paths = campaignPaths(runsDir, id);
  const metric = await metricNameOf(await loadCampaign(runsDir, id));
  const stageDetails = [];
  for (const stage of await listStages(paths)) {
    const experiments: ExperimentStatus[] = [];
    for (const file of stage.blueprintFiles) {
      const blueprintId = basename(file, ".md");
      const snapshot = await readResultDir(paths.result(blueprintId));
      const withMetric = metric === null ? undefined : lastWhere(snapshot.metrics.records, (record) => typeof record[metric] === "number");
      experiments.push({
        blueprintId,
        state: snapshot.finishFlag?.state ?? snapshot.status?.state ?? "not started",
        step: snapshot.status?.step ?? snapshot.metrics.records.at(-1)?.step ?? null,
        metric: withMetric && metric !== null ? (withMetric[metric] as number) : null,
        reason: snapshot.status?.reason ?? null,
      });
    }
    stageDetails.push({ stage: stage.number, experiments });
  }
  const ledger = summarizeLedger((await readLedger(paths.ledger)).entries);
  const costs = {
    gpuHours: ledger.gpu.gpuHours,
    llmCalls: ledger.llm.calls,
    llmTokens: ledger.llm.inputTokens + ledger.llm.outputTokens,
    llmUsd: ledger.llm.costUsd,
    byRoleTable: renderSpendingByRole(ledger),
  };
  return { ...summary, metric, stageDetails, costs };
}

export function renderCampaignTable(summaries: CampaignSummary[]): string {
  if (summaries.length === 0) return "no campaigns";
  return formatTable(
    ["campaign", "stages", "experiments", "state", "best so far"],
    summaries.map((item) => [item.id, String(item.stages), String(item.experiments), item.state, item.best ? bestText(item.best) : "-"]),
  );
}

export function renderCampaignDetail(detail: CampaignDetail): string {
  const lines = [`${detail.id}: ${detail.title}`, `state: ${detail.state}${detail.best ? `, best so far ${bestText(detail.best)}` : ""}`];
  for (const stage of detail.stageDetails) {
    lines.push("", `stage ${stage.stage}`);
    lines.push(
      formatTable(
        ["experiment", "state", "step", detail.metric ?? "metric", "note"],
        stage.experiments.map((item) => [
          item.blueprintId,
          item.state,
          item.step === null ? "-" : String(item.step),
          item.metric === null ? "-" : formatNumber(item.metric),
          item.reason ?? "",
        ]),
      ),
    );
  }
  lines.push("", `GPU-hours booked: ${formatNumber(detail.costs.gpuHours)}`);
  if (detail.costs.llmCalls > 0) lines.push("language-model spending per role:", detail.costs.byRoleTable);
  if (detail.waitingFor) lines.push("", ...describeWaiting(detail.id, detail.waitingFor));
  if (detail.stop) lines.push("", `stopped: ${detail.stop.reason} - ${detail.stop.explanation}`);
  if (detail.state === "finished" && detail.stop?.reason === "budget")
    lines.push(`to go on: raise that budget in the campaign's topic.md, then a3r resume ${detail.id} --reopen`);
  if (detail.report) lines.push(`report: ${detail.report}`);
  return lines.join("\n");
}

function lastOf(events: CampaignEvent[], kind: string): CampaignEvent | undefined {
  return lastWhere(events, (event) => event.kind === kind);
}

function lastWhere<T>(items: T[], test: (item: T) => boolean): T | undefined {
  for (let index = items.length - 1; index >= 0; index -= 1) if (test(items[index]!)) return items[index];
  return undefined;
}

/** "lr-0.5 (mean 0.4696, 3 seeds)": the report's number, computed the same way. */
function bestText(best: NonNullable<CampaignSummary["best"]>): string {
  return `${best.id} (mean ${formatNumber(best.mean)}${best.n === undefined ? "" : `, ${best.n} seed${best.n === 1 ? "" : "s"}`})`;
}

function asStop(value: unknown): { reason: string; explanation: string } | null {
  if (typeof value !== "object" || value === null) return null;
  const { reason, explanation } = value as Record<string, unknown>;
  return typeof reason === "string" ? { reason, explanation: typeof explanation === "string" ? explanation : "" } : null;
}

/**
 * The campaign's best so far: the last analysis's, which is computed over every stage so far
 * the way the report computes it (so both show the same mean, over the same seeds). The goal
 * is kept for campaigns analyzed before that, whose events named each stage's own best.
 */
function bestAcrossStages(events: CampaignEvent[], goal: "maximize" | "minimize"): CampaignSummary["best"] {
  const analyzed = events.filter((event) => event.kind === "stage.analyzed");
  const latest = asBest(analyzed.at(-1)?.best);
  if (latest?.n !== undefined) return latest;
  let best: CampaignSummary["best"] = null;
  for (const event of analyzed) {
    const candidate = asBest(event.best);
    if (candidate && (best === null || (goal === "maximize" ? candidate.mean > best.mean : candidate.mean < best.mean))) best = candidate;
  }
  return best;
}

function asBest(value: unknown): CampaignSummary["best"] {
  if (typeof value !== "object" || value === null) return null;
  const { id, mean, n } = value as Record<string, unknown>;
  return typeof id === "string" && typeof mean === "number" ? { id, mean, ...(typeof n === "number" ? { n } : {}) } : null;
}

// A topic that no longer parses still has a status; its title falls back to the folder.
function titleOf(text: string, file: string): string {
  try {
    return parseTopic(text, { file }).title;
  } catch {
    return basename(file);
  }
}

function goalOf(text: string, file: string): "maximize" | "minimize" {
  try {
    return parseTopic(text, { file }).metric?.goal ?? "maximize";
  } catch {
    return "maximize";
  }
}

/** The metric the campaign compares (the fixed protocol's, when it uses one). */
async function metricNameOf(campaign: { topic: string; paths: { topic: string } }): Promise<string | null> {
  try {
    return (await campaignTopic(campaign)).metric?.name ?? null;
  } catch {
    return null;
  }
}
