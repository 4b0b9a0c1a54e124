import { mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import type { Blueprint } from "../../blueprints/index.ts";
import { appendEvent, appendEventOnce, auditResultDir, isTerminalRunState, isRunState, readEvents } from "../../campaign/index.ts";
import type { HostConfig } from "../kinds/hosts-config.ts";
import type { LaunchRequest, Launcher, LlmAllowance, ProgressState, RunProgress, RunRef } from "../port/launcher.ts";
import { launchGraceMs } from "../port/run-progress.ts";
import { scheduleBlueprints, type Assignment, type HostCapacity, type HostLoad } from "../port/scheduler.ts";

/**
 * Puts blueprints on hosts without a leader (`a3r dispatch`), and follows them with
 * `wait`. The order matters and is kept in this loop:
 *
 * 1. Ask every host about every blueprint first: a run that exists anywhere is followed,
 *    never launched again (a dispatch re-run after a crash is harmless).
 * 2. Count what already runs on each host (other campaigns too) as busy slots.
 * 3. Schedule the rest (hosts/port/scheduler.ts, pure), launch, and record `run.dispatched` in
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
  const stage = new StageDispatch(options);
  // Runs `a3r stop` ended run again: their host sets the stopped run aside, and the row is
  // placed and launched afresh. Stopping is on record in the campaign's events.
  await stage.followRunsThatExist(await stoppedRuns(options.items));
  await stage.countOtherRuns();
  await stage.scheduleWaiting();
  options.onUpdate?.(stage.rows);
  if (!options.wait) return stage.rows;

  const interval = options.intervalMs ?? 2000;
  while (!stage.rows.every(isDone) && !options.signal?.aborted) {
    await new Promise((resolve) => setTimeout(resolve, interval));
    await stage.followOneRound();
    await stage.scheduleWaiting();
    options.onUpdate?.(stage.rows);
    await options.afterRound?.(stage.rows);
  }
  return stage.rows;
}

function waitingRow(item: DispatchItem): DispatchRow {
  return {
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
  };
}

/** A row being followed this round, with its blueprint and the host it is on. */
interface FollowedRun {
  row: DispatchRow;
  item: DispatchItem;
  host: DispatchHost;
}

/** A worker that keeps dying at once is a failure to report, not to repeat. */
const maxRevivals = 3;

/** One dispatch of a stage's rows (`rows[i]` is `options.items[i]`), in the order of the steps above. */
class StageDispatch {
  readonly rows: DispatchRow[];
  private readonly hostsByName: Map<string, DispatchHost>;
  /** Revivals so far per row. */
  private readonly revivals = new Map<DispatchRow, number>();
  /** Rows the host reported unknown, from when, until a relaunch starts them or the host knows them again. */
  private readonly refusedSince = new Map<DispatchRow, number>();
  private readonly refusedLaunchLimitMs: number;
  /** What else runs on each host (other campaigns), counted once before the first placement. */
  private baseline: Record<string, HostLoad> = {};

  constructor(private readonly options: DispatchOptions) {
    this.rows = options.items.map(waitingRow);
    this.hostsByName = new Map(options.hosts.map((host) => [host.config.name, host]));
    this.refusedLaunchLimitMs = options.refusedLaunchLimitMs ?? 3 * launchGraceMs;
  }

  /**
   * 1. Runs that exist somewhere are followed, not launched again (a lost one is revived);
   * a run `a3r stop` ended is set aside on its host and left waiting, to be launched afresh.
   */
  async followRunsThatExist(stopped: ReadonlySet<string>): Promise<void> {
    for (const [index, item] of this.options.items.entries()) {
      for (const host of this.options.hosts) {
        const progress = await host.launcher.poll(refOf(item));
        if (progress.state === "unknown") continue;
        const row = this.rows[index]!;
        if (progress.finished && progress.state === "cancelled" && stopped.has(item.blueprint.id) && host.launcher.setAside) {
          await this.setStoppedRunAside(row, item, host);
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
        if (progress.state === "lost") await this.revive(row, item, host);
        break;
      }
    }
  }

  private async setStoppedRunAside(row: DispatchRow, item: DispatchItem, host: DispatchHost): Promise<void> {
    await host.launcher.setAside!(refOf(item));
    // The copy fetched here (a remote host's) is kept beside, like the host's own.
    await rename(item.resultDir, `${item.resultDir}.set-aside-${Date.now()}`).catch(() => undefined);
    if (item.eventsFile)
      await appendEvent(item.eventsFile, "run.restarted", { blueprintId: item.blueprint.id, host: host.config.name, reason: "stopped by a3r stop" });
    row.note = "stopped earlier; launched again";
  }

  /** 2. What else runs on each host takes slots (our own placed rows are counted apart). */
  async countOtherRuns(): Promise<void> {
    const ours = new Set(this.rows.map((row) => `${row.campaign}+${row.blueprintId}`));
    for (const host of this.options.hosts) {
      const load: HostLoad = { busyGpus: [], runs: 0 };
      for (const ref of await host.launcher.list()) {
        if (ours.has(`${ref.campaign}+${ref.blueprintId}`)) continue;
        const progress = await host.launcher.poll(ref);
        if (progress.finished || progress.state === "lost" || progress.state === "unknown") continue;
        load.runs += 1;
        load.busyGpus.push(...progress.gpuIndices);
      }
      this.baseline[host.config.name] = load;
    }
  }

  /** 3. The waiting rows are scheduled on the slots left (scheduler.ts, pure) and launched. */
  async scheduleWaiting(): Promise<void> {
    const waiting = this.rows.filter((row) => row.state === "waiting" && row.host === null);
    if (waiting.length === 0) return;
    const requests = waiting.map((row) => ({
      blueprintId: row.blueprintId,
      gpus: gpusOf(this.options.items.find((item) => item.blueprint.id === row.blueprintId)!.blueprint),
    }));
    const plan = scheduleBlueprints(
      this.options.hosts.map((host) => host.capacity),
      this.currentLoad(),
      requests,
    );
    for (const { blueprintId, reason } of plan.unschedulable) {
      const row = this.rows.find((candidate) => candidate.blueprintId === blueprintId)!;
      row.state = "unschedulable";
      row.note = reason;
    }
    for (const assignment of plan.assignments) await this.launchAssigned(assignment);
  }

  /** The baseline plus the slots our placed rows hold. */
  private currentLoad(): Record<string, HostLoad> {
    const load: Record<string, HostLoad> = {};
    for (const [name, base] of Object.entries(this.baseline)) load[name] = { busyGpus: [...base.busyGpus], runs: base.runs };
    for (const row of this.rows) {
      if (!holdsSlot(row) || row.host === null) continue;
      const entry = load[row.host] ?? (load[row.host] = { busyGpus: [], runs: 0 });
      entry.runs += 1;
      entry.busyGpus.push(...row.gpuIndices);
    }
    return load;
  }

  /** Launches one placed row and records `run.dispatched` once the launch answered. */
  private async launchAssigned(assignment: Assignment): Promise<void> {
    const index = this.rows.findIndex((candidate) => candidate.blueprintId === assignment.blueprintId);
    const row = this.rows[index]!;
    const item = this.options.items[index]!;
    const host = this.hostsByName.get(assignment.host)!;
    try {
      await mkdir(item.resultDir, { recursive: true });
      const outcome = await host.launcher.launch(launchRequestOf(item, assignment.gpuIndices));
      row.host = assignment.host;
      row.gpuIndices = assignment.gpuIndices;
      row.state = "launching";
      row.note = outcome.started ? "launched" : "already launched";
      if (outcome.started) this.refusedSince.delete(row);
      else if (this.refusedSince.has(row) && Date.now() - this.refusedSince.get(row)! > this.refusedLaunchLimitMs) {
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

  /**
   * A run whose worker died while it was live (killed with the leader, say) gets a new
   * worker on the same host and result directory, which re-attaches to the trainer or
   * resumes it from its checkpoint; a few times per dispatch.
   */
  private async revive(row: DispatchRow, item: DispatchItem, host: DispatchHost): Promise<boolean> {
    const done = this.revivals.get(row) ?? 0;
    if (done >= maxRevivals) return false;
    this.revivals.set(row, done + 1);
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
  }

  /** 4. One waiting round: poll every followed run, copy what it has, fetch and audit what finished. */
  async followOneRound(): Promise<void> {
    const followed = this.rows.flatMap((row, index): FollowedRun[] =>
      row.host === null || isDone(row) ? [] : [{ row, item: this.options.items[index]!, host: this.hostsByName.get(row.host)! }],
    );
    const latest = await this.pollByHost(followed);
    for (const run of followed) {
      const progress = latest.get(run.row);
      if (progress) await this.follow(run, progress);
    }
  }

  /** One pollMany per host: over ssh a whole cycle is one command. A host that fails leaves its rows for next round. */
  private async pollByHost(followed: FollowedRun[]): Promise<Map<DispatchRow, RunProgress>> {
    const latest = new Map<DispatchRow, RunProgress>();
    for (const host of this.options.hosts) {
      const mine = followed.filter((entry) => entry.host === host);
      if (mine.length === 0) continue;
      try {
        const answers = await host.launcher.pollMany(mine.map((entry) => refOf(entry.item)));
        answers.forEach((progress, index) => latest.set(mine[index]!.row, progress));
      } catch (error) {
        for (const entry of mine) entry.row.note = `poll failed (will retry): ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    return latest;
  }

  private async follow({ row, item, host }: FollowedRun, progress: RunProgress): Promise<void> {
    if (progress.state === "unknown") {
      // The host no longer knows the run (a claim whose worker never started): it is
      // placed and launched again, never followed forever.
      if (!this.refusedSince.has(row)) this.refusedSince.set(row, Date.now());
      Object.assign(row, { host: null, state: "waiting", finished: false, gpuIndices: [], note: "its launch never started; launching again" });
      return;
    }
    this.refusedSince.delete(row);
    if (progress.state === "lost" && (await this.revive(row, item, host))) return;
    try {
      applyProgress(row, progress);
      const fetched = await host.launcher.fetch(refOf(item), item.resultDir);
      if (row.finished && fetched.complete) await auditFetched(row, item);
      else if (row.finished) row.finished = false; // finished there, but the copy is not complete yet: fetch again next round
    } catch (error) {
      row.note = `poll failed (will retry): ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}

/** A finished run's complete copy is audited, and `run.fetched` records it. */
async function auditFetched(row: DispatchRow, item: DispatchItem): Promise<void> {
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
}

export function gpusOf(blueprint: Blueprint): number {
  const gpus = Number(blueprint.frontMatter.gpus ?? 0);
  return Number.isInteger(gpus) && gpus >= 0 ? gpus : 0;
}

export function defaultResultDir(runsDir: string, campaign: string, blueprintId: string): string {
  return join(runsDir, campaign, "results", blueprintId);
}
