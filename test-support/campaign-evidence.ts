import { readdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { readEvents, readResultDir } from "../campaign/index.ts";
import type { CampaignEvent } from "../campaign/index.ts";
import { localHostWorkdir } from "../cli/research/hosts-option.ts";

/**
 * What a finished campaign folder proves, gathered from the records each part keeps for
 * itself rather than from the leader's own claims: the host's launch records
 * (`.hosts/here/<campaign>/<id>/launch.json`), each result directory's status.json,
 * finish.flag and metrics, the worker's events in it, and the trainer's own start log
 * (`trainer-starts.jsonl`, written by test-support/fast-trainer.mjs). Kill-and-resume
 * tests compare a resumed campaign's evidence with an uninterrupted one's.
 */
export interface RunEvidence {
  launchRecord: boolean;
  finish: string | null;
  state: string | null;
  attempt: number | null;
  steps: number[];
  finalMetric: number | null;
  /** Worker events in the result directory, by kind (run.preparing, run.launched ...). */
  workerEvents: Record<string, number>;
  /** Lines of trainer-starts.jsonl: how often the trainer itself started. */
  trainerStarts: number;
}

export interface CampaignEvidence {
  /** Blueprint ids per stage, from stages/<n>/blueprints/. */
  stages: Record<number, string[]>;
  resultDirs: string[];
  /** Blueprint ids with a launch record on the local host. */
  launchRecords: string[];
  runs: Record<string, RunEvidence>;
  events: CampaignEvent[];
  eventProblems: string[];
  reportExists: boolean;
}

export async function collectCampaignEvidence(runsDir: string, campaignId: string, metric = "reward_mean"): Promise<CampaignEvidence> {
  const campaign = join(runsDir, campaignId);
  const stages: Record<number, string[]> = {};
  for (const name of await readdir(join(campaign, "stages")).catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const files = await readdir(join(campaign, "stages", name, "blueprints")).catch(() => [] as string[]);
    stages[Number(name)] = files
      .filter((file) => file.endsWith(".md"))
      .map((file) => basename(file, ".md"))
      .sort();
  }
  const resultDirs = (await readdir(join(campaign, "results")).catch(() => [] as string[])).sort();
  const hostFolder = join(localHostWorkdir(runsDir), campaignId);
  const launchRecords: string[] = [];
  for (const id of await readdir(hostFolder).catch(() => [] as string[])) {
    if ((await readFile(join(hostFolder, id, "launch.json"), "utf8").catch(() => undefined)) !== undefined) launchRecords.push(id);
  }
  launchRecords.sort();

  const runs: Record<string, RunEvidence> = {};
  for (const id of new Set([...Object.values(stages).flat(), ...resultDirs, ...launchRecords])) {
    const dir = join(campaign, "results", id);
    const snapshot = await readResultDir(dir);
    const workerEvents: Record<string, number> = {};
    for (const event of snapshot.events.events) workerEvents[event.kind] = (workerEvents[event.kind] ?? 0) + 1;
    const withMetric = snapshot.metrics.records.filter((record) => typeof record[metric] === "number");
    const starts = await readFile(join(dir, "trainer-starts.jsonl"), "utf8").catch(() => "");
    runs[id] = {
      launchRecord: launchRecords.includes(id),
      finish: snapshot.finishFlag?.text ?? null,
      state: snapshot.status?.state ?? null,
      attempt: snapshot.status?.attempt ?? null,
      steps: snapshot.metrics.records.map((record) => record.step),
      finalMetric: withMetric.length === 0 ? null : (withMetric[withMetric.length - 1]![metric] as number),
      workerEvents,
      trainerStarts: starts.split("\n").filter((line) => line.trim() !== "").length,
    };
  }
  const read = await readEvents(join(campaign, "events.jsonl"));
  const reportExists = await readFile(join(campaign, "report.md"), "utf8").then(
    (text) => text.trim() !== "",
    () => false,
  );
  return {
    stages,
    resultDirs,
    launchRecords,
    runs,
    events: read.events,
    eventProblems: read.problems.map((problem) => `${problem.file}:${problem.line} ${problem.message}`),
    reportExists,
  };
}

/** Events of `kind` (matching `where`), in file order. */
export function eventsOf(evidence: CampaignEvidence, kind: string, where: (event: CampaignEvent) => boolean = () => true): CampaignEvent[] {
  return evidence.events.filter((event) => event.kind === kind && where(event));
}

/**
 * What an interrupted campaign must break none of, each broken rule in words (empty when
 * all hold): every planned blueprint launched exactly once by every record that can tell,
 * every result complete, and an event log whose stage events are whole, once, and in order.
 */
export function campaignInvariantProblems(evidence: CampaignEvidence): string[] {
  const problems: string[] = [...evidence.eventProblems.map((problem) => `events.jsonl does not parse: ${problem}`)];
  const planned = Object.values(evidence.stages).flat();
  for (const id of evidence.resultDirs) if (!planned.includes(id)) problems.push(`${id}: a result directory for no planned blueprint`);
  for (const id of evidence.launchRecords) if (!planned.includes(id)) problems.push(`${id}: a launch record for no planned blueprint`);
  for (const id of planned) {
    const run = evidence.runs[id]!;
    if (!run.launchRecord) problems.push(`${id}: no launch record on the host`);
    if (run.finish !== "succeeded") problems.push(`${id}: finish.flag is ${run.finish === null ? "missing" : `"${run.finish}"`}`);
    if (run.state !== "succeeded") problems.push(`${id}: status.json state is ${run.state}`);
    if (run.attempt !== 1) problems.push(`${id}: status.json attempt is ${run.attempt}, not 1`);
    if (run.finalMetric === null) problems.push(`${id}: metrics.jsonl has no value of the metric`);
    if (run.trainerStarts !== 1) problems.push(`${id}: the trainer started ${run.trainerStarts} time(s)`);
    for (const kind of ["run.preparing", "run.launched", "run.finished"]) {
      if (run.workerEvents[kind] !== 1) problems.push(`${id}: the worker wrote ${kind} ${run.workerEvents[kind] ?? 0} time(s), not once`);
    }
    // A second `a3r worker run` on a live or ended run says so: it re-attaches or finds it ended.
    for (const kind of ["worker.reattached", "worker.found-ended"]) {
      if ((run.workerEvents[kind] ?? 0) > 0) problems.push(`${id}: a second worker ran on it (${kind})`);
    }
    // The log must record each run's dispatch, and never claim two launches of one.
    const dispatched = eventsOf(evidence, "run.dispatched", (event) => event.blueprintId === id);
    if (dispatched.length === 0) problems.push(`${id}: no run.dispatched event`);
    const started = dispatched.filter((event) => event.started === true).length;
    if (started > 1) problems.push(`${id}: ${started} run.dispatched events with started: true`);
    if (eventsOf(evidence, "run.fetched", (event) => event.blueprintId === id).length === 0) problems.push(`${id}: no run.fetched event`);
  }
  const index = (event: CampaignEvent | undefined) => (event === undefined ? -1 : evidence.events.indexOf(event));
  for (const stage of Object.keys(evidence.stages).map(Number)) {
    const ofStage = (kind: string) => eventsOf(evidence, kind, (event) => event.stage === stage);
    for (const kind of ["stage.planned", "stage.analyzed"]) {
      if (ofStage(kind).length !== 1) problems.push(`stage ${stage}: ${ofStage(kind).length} ${kind} events, not 1`);
    }
    for (const kind of ["stage.dispatched", "stage.finished"]) if (ofStage(kind).length === 0) problems.push(`stage ${stage}: no ${kind} event`);
    const order = ["stage.planned", "stage.dispatched", "stage.finished", "stage.analyzed"].map((kind) => index(ofStage(kind)[0]));
    if (order.some((position, at) => at > 0 && position < order[at - 1]!))
      problems.push(`stage ${stage}: planned, dispatched, finished and analyzed are out of order (lines ${order.join(", ")})`);
  }
  const reported = eventsOf(evidence, "campaign.reported");
  if (reported.length !== 1) problems.push(`${reported.length} campaign.reported events, not 1`);
  else if (evidence.events[evidence.events.length - 1] !== reported[0])
    problems.push(`campaign.reported is not the last event (${evidence.events[evidence.events.length - 1]!.kind} follows it)`);
  if (!evidence.reportExists) problems.push("report.md is missing or empty");
  return problems;
}

/**
 * The part of a campaign that must not depend on when its leader was killed: the
 * blueprints per stage, the result directories, the final metric of every run, the stop
 * reason, and which stage and run events exist (duplicates aside; a run.dispatched counts
 * whether its launch started the run or found it started).
 */
export function campaignOutcome(evidence: CampaignEvidence) {
  const keys = new Set<string>();
  for (const event of evidence.events) {
    if (!/^(stage\.|campaign\.(stop_decided|reported)|run\.(dispatched|fetched))/.test(event.kind)) continue;
    keys.add([event.kind, event.stage ?? "", event.blueprintId ?? ""].join(" "));
  }
  const stop = eventsOf(evidence, "campaign.reported")[0]?.stop as { reason?: string } | null | undefined;
  return {
    stages: evidence.stages,
    resultDirs: evidence.resultDirs,
    finalMetrics: Object.fromEntries(Object.entries(evidence.runs).map(([id, run]) => [id, run.finalMetric])),
    stopReason: stop?.reason ?? null,
    eventKeys: [...keys].sort(),
  };
}
