import { parse as parseYaml } from "yaml";
import { readFile } from "node:fs/promises";
import { appendEventOnce, isRunState, isTerminalRunState, readEvents, readMetrics } from "../../campaign/index.ts";
import type { DispatchHost, DispatchItem, DispatchRow } from "../../hosts/index.ts";
import { decideEarlyStops, earlyStopsApplyTo, type EarlyStop, type EarlyStopRun } from "../domain/early-stop.ts";
import type { StagePlan } from "../domain/planner.ts";
import type { Topic } from "../domain/topic.ts";

/**
 * The watch node's early stopping (leader/domain/early-stop.ts decides, this does the I/O):
 * after every dispatcher round it reads the live metrics of the stage's runs (the copies
 * in `results/<id>/`), asks the pure rule what to stop, and writes a stop request to each
 * run's host (`Launcher.requestStop`). Every stop is recorded once, with its evidence, as
 * `run.stopped_early` in the campaign's events; each standing at a rung as `stage.rung_decided`.
 *
 * Idempotent after a crash: the stops already recorded are read back from the events (a
 * run stopped at rung 1 stays out of rung 2), and a request written twice is harmless.
 * A host without `requestStop` (queue) lets its runs finish, said once per run
 * (`early_stop.unsupported`); a run that finished before the request reached it is
 * `early_stop.too_late`; a host that could not be written to is asked again next round
 * (`early_stop.request_failed`, once per error). Replication stages run every seed to its end.
 */
export interface EarlyStopperInput {
  topic: Topic;
  plan: StagePlan;
  items: readonly DispatchItem[];
  hosts: readonly DispatchHost[];
  eventsFile: string;
}

export async function createEarlyStopper(input: EarlyStopperInput): Promise<((rows: DispatchRow[]) => Promise<void>) | undefined> {
  const { topic, plan, items, hosts, eventsFile } = input;
  const rule = topic.earlyStop;
  const metric = topic.metric;
  // Only stages that try configurations race (domain/early-stop.ts says why; the research
  // bench simulates the same rule).
  if (!rule || !metric || !earlyStopsApplyTo(plan.kind)) return undefined;
  const configurationOf = new Map(plan.experiments.map((experiment) => [experiment.blueprintId, experiment.configurationId]));
  const stoppedAt = new Map<string, number>();
  for (const event of (await readEvents(eventsFile)).events)
    if (event.kind === "run.stopped_early" && typeof event.blueprintId === "string" && typeof event.rung === "number")
      stoppedAt.set(event.blueprintId, event.rung);
  const maxSteps = new Map<string, number | undefined>();
  for (const item of items) maxSteps.set(item.blueprint.id, await maxStepsOf(item));
  const unknown = items.filter((item) => maxSteps.get(item.blueprint.id) === undefined).map((item) => item.blueprint.id);
  if (unknown.length > 0)
    await appendEventOnce(
      eventsFile,
      "early_stop.disabled",
      { stage: plan.stage },
      { blueprintIds: unknown, reason: "max_steps is in neither the blueprint's overrides nor its configuration: rungs are fractions of it" },
    );
  const decided = new Set<string>();

  return async (rows: DispatchRow[]) => {
    const runs: EarlyStopRun[] = [];
    for (const [index, row] of rows.entries()) {
      const item = items[index]!;
      const steps = maxSteps.get(item.blueprint.id);
      const configurationId = configurationOf.get(row.blueprintId);
      if (steps === undefined || configurationId === undefined) continue;
      const started = row.host !== null && row.state !== "waiting" && row.state !== "unknown";
      const ended =
        row.finished ||
        row.state === "lost" ||
        row.state === "launch_failed" ||
        row.state === "unschedulable" ||
        (isRunState(row.state) && isTerminalRunState(row.state));
      const records = started ? (await readMetrics(`${item.resultDir}/metrics.jsonl`)).records : [];
      const points = records.flatMap((record) => {
        const value = record[metric.name];
        return typeof value === "number" && Number.isFinite(value) ? [{ step: record.step, value }] : [];
      });
      const lastStep = records.length === 0 ? null : Math.max(...records.map((record) => record.step));
      const stopped = stoppedAt.get(row.blueprintId);
      runs.push({
        blueprintId: row.blueprintId,
        configurationId,
        live: started && !ended,
        maxSteps: steps,
        lastStep,
        points,
        ...(stopped === undefined ? {} : { stoppedAtRung: stopped }),
      });
    }
    const outcome = decideEarlyStops(runs, rule, metric);
    for (const decision of outcome.rungs) {
      // Fewer than two configurations at a rung compare nothing: no record.
      if (decision.ranking.length < 2) continue;
      // A run that gets its slot late joins a decided rung: each new standing is on record once.
      const ranked = decision.ranking.map((standing) => standing.configurationId);
      const key = `${decision.rung}:${ranked.join(",")}:${decision.cut.join(",")}`;
      if (decided.has(key)) continue;
      decided.add(key);
      await appendEventOnce(eventsFile, "stage.rung_decided", { stage: plan.stage, rung: decision.rung, ranked, cut: decision.cut }, { ...decision });
    }
    for (const stop of outcome.stops) if (await requestStop(stop, rows, hosts, plan.stage, eventsFile)) stoppedAt.set(stop.blueprintId, stop.rung);
  };
}

/** True when the stop is settled (asked, or impossible on this host); false to try again next round. */
async function requestStop(stop: EarlyStop, rows: DispatchRow[], hosts: readonly DispatchHost[], stage: number, eventsFile: string): Promise<boolean> {
  const row = rows.find((candidate) => candidate.blueprintId === stop.blueprintId)!;
  const host = hosts.find((candidate) => candidate.config.name === row.host);
  const { reason, ...evidence } = stop;
  if (!host?.launcher.requestStop) {
    await appendEventOnce(
      eventsFile,
      "early_stop.unsupported",
      { blueprintId: stop.blueprintId },
      {
        stage,
        host: row.host,
        reason: `host ${row.host} (${host?.launcher.kind ?? "unknown"}) cannot stop a run on request; it runs to its end`,
        would: reason,
      },
    );
    return true;
  }
  let written: boolean;
  try {
    written = await host.launcher.requestStop(
      { campaign: row.campaign, blueprintId: row.blueprintId },
      { state: "stopped_early", reason, evidence: { ...evidence, stage } },
    );
  } catch (error) {
    // A host that cannot be written to now (a dropped connection) is asked again next round.
    const message = error instanceof Error ? error.message : String(error);
    await appendEventOnce(eventsFile, "early_stop.request_failed", { blueprintId: stop.blueprintId, error: message }, { stage, host: row.host });
    return false;
  }
  if (!written) {
    // It finished (or vanished) before the request reached it: nothing was cut.
    await appendEventOnce(eventsFile, "early_stop.too_late", { blueprintId: stop.blueprintId }, { stage, host: row.host, would: reason });
    return false;
  }
  await appendEventOnce(eventsFile, "run.stopped_early", { blueprintId: stop.blueprintId }, { stage, host: row.host, requested: true, reason, ...evidence });
  return true;
}

/** The run's max_steps: its overrides' (base overrides and knobs merged), else its configuration's top-level key. */
async function maxStepsOf(item: DispatchItem): Promise<number | undefined> {
  const overrides = item.blueprint.frontMatter.overrides as Record<string, unknown> | undefined;
  const fromOverrides = positive(overrides?.max_steps);
  if (fromOverrides !== undefined || item.blueprint.config === null) return fromOverrides;
  try {
    const text = await readFile(item.blueprint.config, "utf8");
    const config = item.blueprint.config.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
    return positive((config as Record<string, unknown> | null)?.max_steps);
  } catch {
    return undefined;
  }
}

function positive(value: unknown): number | undefined {
  const number = typeof value === "string" ? Number(value) : value;
  return typeof number === "number" && Number.isFinite(number) && number > 0 ? number : undefined;
}
