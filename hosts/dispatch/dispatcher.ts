import { mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import type { Blueprint } from "../../blueprints/index.ts";
import { appendEvent, appendEventOnce, auditResultDir, isTerminalRunState, isRunState, readEvents } from "../../campaign/index.ts";
import type { HostConfig } from "../kinds/hosts-config.ts";
import type { LaunchRequest, Launcher, LlmAllowance, ProgressState, RunProgress, RunRef } from "../port/launcher.ts";
import { launchGraceMs } from "../port/run-progress.ts";
import { scheduleBlueprints, type HostCapacity, type HostLoad } from "../port/scheduler.ts";

/**
 * Puts blueprints on hosts without a leader (`a3r dispatch`), and follows them with
 * `wait`. The order matters and is kept in this loop:
 *
 * 1. Ask every host about every blueprint first: a run that exists anywhere is followed,
 *    never launched again (a dispatch re-run after a crash is harmless).
 * 2. Count what already runs on each host (other campaigns too) as busy slots.
 * 3. Schedule the rest (hosts/dispatch/scheduler.ts, pure), launch, and record `run.dispatched` in
 *    the campaign's events.jsonl, after the launch answered and before anything else.
 * 4. While waiting: poll, copy live status and metrics into the campaign's result folder,
 *    fetch the whole result directory once finished and audit it, and launch waiting
 *    blueprints as slots free up.
 *
 * Left out: retries of failed runs (a retry is a new blueprint, the leader's decision)
 * and budgets.
 */
export interface DispatchItem {
  blueprint: Blueprint;
  file: string;
  campaign: string;
  /** Where the result directory lands on this machine (runs/<campaign>/results/<id>). */
  resultDir: string;
  /** The campaign's events.jsonl, for `run.dispatched` and `run.fetched`. */
  eventsFile?: string;
  /** The run's share of the campaign's LLM budget (see LaunchRequest.llmAllowance). */
  llmAllowance?: LlmAllowance;
}

export interface DispatchHost {
  config: HostConfig;
  launcher: Launcher;
  capacity: HostCapacity;
}

export type DispatchState = ProgressState | "waiting" | "unschedulable" | "launch_failed";

export interface DispatchRow {
  campaign: string;
  blueprintId: string;
  host: string | null;
  state: DispatchState;
  finished: boolean;
  gpuIndices: number[];
  step: number | null;
  startedAt: string | null;
  timeBudgetMs: number;
  lastMetrics: Record<string, number> | null;
  note: string;
  /** Errors in the fetched result directory's audit (0 when clean). */
  auditErrors: number | null;
}

export interface DispatchOptions {
  items: DispatchItem[];
  hosts: DispatchHost[];
  wait: boolean;
  intervalMs?: number;
  /** Called after every round with the current rows. */
  onUpdate?: (rows: DispatchRow[]) => void;
  /**
   * Awaited after every waiting round, after `onUpdate`: what the caller does about the
   * rows before the next poll (the leader's early stopping asks hosts to stop runs here).
   * An error it throws ends the dispatch with that error.
   */
  afterRound?: (rows: DispatchRow[]) => Promise<void>;
  /** Stops waiting early (Ctrl-C); the runs keep going. */
  signal?: AbortSignal;
  /**
   * How long a run the host calls unknown may keep being refused a new launch before its
   * row fails. Past the launch grace a launcher takes over any claim whose worker never
   * started, so a refusal that outlasts it twice over will not end by itself. Default 45 s.
   */
  refusedLaunchLimitMs?: number;
}

const refOf = (item: DispatchItem): RunRef => ({ campaign: item.campaign, blueprintId: item.blueprint.id });

function launchRequestOf(item: DispatchItem, gpuIndices: number[]): LaunchRequest {
  return {
    ...refOf(item),
    blueprintFile: item.file,
    gpuIndices,
    resultDir: item.resultDir,
    ...(item.llmAllowance === undefined ? {} : { llmAllowance: item.llmAllowance }),
  };
}

/** Nothing more to do for this row: its result is here and audited, or it will never run. */
export function isDone(row: DispatchRow): boolean {
  return row.state === "unschedulable" || row.state === "launch_failed" || row.state === "lost" || (row.finished && row.auditErrors !== null);
}

function holdsSlot(row: DispatchRow): boolean {
  return row.host !== null && !row.finished && row.state !== "lost" && !(isRunState(row.state) && isTerminalRunState(row.state));
}

function applyProgress(row: DispatchRow, progress: RunProgress): void {
  row.state = progress.state;
  row.finished = progress.finished;
  row.step = progress.step;
  row.startedAt = progress.startedAt;
  row.lastMetrics = progress.lastMetrics;
  if (progress.gpuIndices.length > 0) row.gpuIndices = progress.gpuIndices;
  if (progress.reason) row.note = progress.reason;
}

/** Blueprint ids whose last word in the events is `run.stopped` (not yet `run.restarted`). */
async function stoppedRuns(items: readonly DispatchItem[]): Promise<Set<string>> {
  const stopped = new Set<string>();
  const files = [...new Set(items.map((item) => item.eventsFile).filter((file): file is string => file !== undefined))];
  for (const file of files) {
    for (const event of (await readEvents(file)).events) {
      const id = typeof event.blueprintId === "string" ? event.blueprintId : undefined;
      if (id === undefined) continue;
      if (event.kind === "run.stopped") stopped.add(id);
      else if (event.kind === "run.restarted") stopped.delete(id);
    }
  }
  return stopped;
}

export async function dispatchBlueprints(options: DispatchOptions): Promise<DispatchRow[]> {
  const hostsByName = new Map(options.hosts.map((host) => [host.config.name, host]));
  const rows: DispatchRow[] = options.items.map((item) => ({
    campaign: item.campaign,
    blueprintId: item.blueprint.id,
    host: null,
    state: "waiting",
    finished: false,
    gpuIndices: [],
    step: null,
    startedAt: null,
    timeBudgetMs: item.blueprint.timeBudgetMs,
    lastMetrics: null,
    note: "",
    auditErrors: null,
  }));

  // A run whose worker died while it was live (killed with the leader, say) gets a new
  // worker on the same host and result directory, which re-attaches to the trainer or
  // resumes it from its checkpoint. A few times per dispatch: a worker that keeps dying at
  // once is a failure to report, not to repeat.
  const revivals = new Map<DispatchRow, number>();
  const maxRevivals = 3;
  const revive = async (row: DispatchRow, item: DispatchItem, host: DispatchHost): Promise<boolean> => {
    const done = revivals.get(row) ?? 0;
    if (done >= maxRevivals) return false;
    revivals.set(row, done + 1);
    try {
      const outcome = await host.launcher.launch({ ...launchRequestOf(item, row.gpuIndices), revive: true });
      Object.assign(row, {
        state: "launching",
        finished: false,
        note: outcome.started ? "its worker was gone: a new one re-attaches" : "its worker was gone; the host did not start a new one",
      });
      if (item.eventsFile)
        await appendEvent(item.eventsFile, "run.revived", {
          blueprintId: item.blueprint.id,
          host: host.config.name,
          started: outcome.started,
          attempt: done + 1,
        });
      return outcome.started;
    } catch (error) {
      row.note = `its worker is gone and a new one could not start: ${error instanceof Error ? error.message : String(error)}`;
      return false;
    }
  };

  // Runs `a3r stop` ended run again: their host sets the stopped run aside, and the row is
  // placed and launched afresh. Stopping is on record in the campaign's events.
  const stopped = await stoppedRuns(options.items);

  // 1. Runs that exist somewhere are followed, not launched again (a lost one is revived).
  for (const [index, item] of options.items.entries()) {
    for (const host of options.hosts) {
      const progress = await host.launcher.poll(refOf(item));
      if (progress.state === "unknown") continue;
      const row = rows[index]!;
      if (progress.finished && progress.state === "cancelled" && stopped.has(item.blueprint.id) && host.launcher.setAside) {
        await host.launcher.setAside(refOf(item));
        // The copy fetched here (a remote host's) is kept beside, like the host's own.
        await rename(item.resultDir, `${item.resultDir}.set-aside-${Date.now()}`).catch(() => undefined);
        if (item.eventsFile)
          await appendEvent(item.eventsFile, "run.restarted", { blueprintId: item.blueprint.id, host: host.config.name, reason: "stopped by a3r stop" });
        row.note = "stopped earlier; launched again";
        break;
      }
      row.host = host.config.name;
      applyProgress(row, progress);
      row.note = row.note || "already dispatched";
      // A dispatcher killed between a launch and its event leaves a run the log never
      // mentions: the run found here is recorded now, as one the campaign did not start twice.
      if (item.eventsFile)
        await appendEventOnce(
          item.eventsFile,
          "run.dispatched",
          { blueprintId: item.blueprint.id },
          { host: row.host, gpuIndices: progress.gpuIndices, started: false },
        );
      if (progress.state === "lost") await revive(row, item, host);
      break;
    }
  }

  // 2. What else runs on each host takes slots (our own placed rows are counted apart).
  const ours = new Set(rows.map((row) => `${row.campaign}+${row.blueprintId}`));
  const baseline: Record<string, HostLoad> = {};
  for (const host of options.hosts) {
    const load: HostLoad = { busyGpus: [], runs: 0 };
    for (const ref of await host.launcher.list()) {
      if (ours.has(`${ref.campaign}+${ref.blueprintId}`)) continue;
      const progress = await host.launcher.poll(ref);
      if (progress.finished || progress.state === "lost" || progress.state === "unknown") continue;
      load.runs += 1;
      load.busyGpus.push(...progress.gpuIndices);
    }
    baseline[host.config.name] = load;
  }

  // Rows the host reported unknown, from when, until a relaunch starts them or the host knows them again.
  const refusedSince = new Map<DispatchRow, number>();
  const refusedLaunchLimitMs = options.refusedLaunchLimitMs ?? 3 * launchGraceMs;

  const scheduleWaiting = async (): Promise<void> => {
    const waiting = rows.filter((row) => row.state === "waiting" && row.host === null);
    if (waiting.length === 0) return;
    const load: Record<string, HostLoad> = {};
    for (const [name, base] of Object.entries(baseline)) load[name] = { busyGpus: [...base.busyGpus], runs: base.runs };
    for (const row of rows) {
      if (!holdsSlot(row) || row.host === null) continue;
      const entry = load[row.host] ?? (load[row.host] = { busyGpus: [], runs: 0 });
      entry.runs += 1;
      entry.busyGpus.push(...row.gpuIndices);
    }
    const requests = waiting.map((row) => ({
      blueprintId: row.blueprintId,
      gpus: gpusOf(options.items.find((item) => item.blueprint.id === row.blueprintId)!.blueprint),
    }));
    const plan = scheduleBlueprints(
      options.hosts.map((host) => host.capacity),
      load,
      requests,
    );
    for (const { blueprintId, reason } of plan.unschedulable) {
      const row = rows.find((candidate) => candidate.blueprintId === blueprintId)!;
      row.state = "unschedulable";
      row.note = reason;
    }
    for (const assignment of plan.assignments) {
      const index = rows.findIndex((candidate) => candidate.blueprintId === assignment.blueprintId);
      const row = rows[index]!;
      const item = options.items[index]!;
      const host = hostsByName.get(assignment.host)!;
      try {
        await mkdir(item.resultDir, { recursive: true });
        const outcome = await host.launcher.launch(launchRequestOf(item, assignment.gpuIndices));
        row.host = assignment.host;
        row.gpuIndices = assignment.gpuIndices;
        row.state = "launching";
        row.note = outcome.started ? "launched" : "already launched";
        if (outcome.started) refusedSince.delete(row);
        else if (refusedSince.has(row) && Date.now() - refusedSince.get(row)! > refusedLaunchLimitMs) {
          // The host says it has no run, yet refuses to start one: its launch claim can be
          // neither followed nor taken over. Failing the row ends the stage with a reason;
          // following it would keep the leader waiting forever.
          row.state = "launch_failed";
          row.note = `${assignment.host} reports no run for ${row.blueprintId} but keeps refusing to launch it (a launch claim it cannot read?); look in the host's workdir under ${row.campaign}/${row.blueprintId}`;
        }
        if (item.eventsFile) {
          await appendEvent(item.eventsFile, "run.dispatched", {
            blueprintId: item.blueprint.id,
            host: assignment.host,
            gpuIndices: assignment.gpuIndices,
            started: outcome.started,
          });
        }
      } catch (error) {
        row.state = "launch_failed";
        row.note = `launch failed: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
  };

  await scheduleWaiting();
  options.onUpdate?.(rows);
  if (!options.wait) return rows;

  const interval = options.intervalMs ?? 2000;
  while (!rows.every(isDone) && !options.signal?.aborted) {
    await new Promise((resolve) => setTimeout(resolve, interval));
    // One pollMany per host: over ssh a whole cycle is one command.
    const followed = rows.flatMap((row, index) =>
      row.host === null || isDone(row) ? [] : [{ row, item: options.items[index]!, host: hostsByName.get(row.host)! }],
    );
    const latest = new Map<DispatchRow, RunProgress>();
    for (const host of options.hosts) {
      const mine = followed.filter((entry) => entry.host === host);
      if (mine.length === 0) continue;
      try {
        const answers = await host.launcher.pollMany(mine.map((entry) => refOf(entry.item)));
        answers.forEach((progress, index) => latest.set(mine[index]!.row, progress));
      } catch (error) {
        for (const entry of mine) entry.row.note = `poll failed (will retry): ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    for (const { row, item, host } of followed) {
      const progress = latest.get(row);
      if (!progress) continue;
      if (progress.state === "unknown") {
        // The host no longer knows the run (a claim whose worker never started): it is
        // placed and launched again, never followed forever.
        if (!refusedSince.has(row)) refusedSince.set(row, Date.now());
        Object.assign(row, { host: null, state: "waiting", finished: false, gpuIndices: [], note: "its launch never started; launching again" });
        continue;
      }
      refusedSince.delete(row);
      if (progress.state === "lost" && (await revive(row, item, host))) continue;
      try {
        applyProgress(row, progress);
        const fetched = await host.launcher.fetch(refOf(item), item.resultDir);
        if (row.finished && fetched.complete) {
          const findings = await auditResultDir(item.resultDir);
          row.auditErrors = findings.filter((finding) => finding.severity === "error").length;
          if (item.eventsFile)
            await appendEvent(item.eventsFile, "run.fetched", {
              blueprintId: item.blueprint.id,
              host: row.host,
              state: row.state,
              resultDir: item.resultDir,
              auditErrors: row.auditErrors,
            });
        } else if (row.finished) {
          row.finished = false; // finished there, but the copy is not complete yet: fetch again next round
        }
      } catch (error) {
        row.note = `poll failed (will retry): ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    await scheduleWaiting();
    options.onUpdate?.(rows);
    await options.afterRound?.(rows);
  }
  return rows;
}

export function gpusOf(blueprint: Blueprint): number {
  const gpus = Number(blueprint.frontMatter.gpus ?? 0);
  return Number.isInteger(gpus) && gpus >= 0 ? gpus : 0;
}

export function defaultResultDir(runsDir: string, campaign: string, blueprintId: string): string {
  return join(runsDir, campaign, "results", blueprintId);
}
