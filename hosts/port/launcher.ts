import type { MetricsRecord, RunState, StopRequest } from "../../campaign/index.ts";

/**
 * The launcher port: how one blueprint reaches one host and how its run is followed.
 * Implementations: one per host kind (port/host-kind.ts, kinds/registry.ts): `local` (this
 * machine), `ssh` (ssh2 to a remote host), `queue` (BullMQ on Redis, pulled by worker
 * daemons), `slurm` (sbatch) and `ray` (detached Ray actors). All pass `launcher-conformance.ts`.
 *
 * Contract:
 * - Every method is keyed by campaign and blueprint id (`RunRef`), never by an in-memory
 *   handle, so a leader restarted after a crash can poll, fetch and cancel what an
 *   earlier process launched.
 * - `launch` is idempotent: a second launch of the same ref starts nothing and says so
 *   (`started: false`), whether the first run is still going, finished or lost.
 * - `poll` never throws for a run it does not know: it answers `unknown`.
 * - `fetch` copies what exists into a local folder: status.json and metrics.jsonl while
 *   the run is going (a live copy), the whole result directory once it has finished.
 * - `cancel` stops the run's process group on the host; the worker writes the final
 *   state (cancelled) when it can.
 *
 * Left out on purpose: choosing the host and GPUs (the scheduler does), retrying a failed
 * run (the leader decides; a retry is a new blueprint id), what the worker does inside a
 * run (worker/), and authentication material beyond what hosts.yaml names.
 */
export interface RunRef {
  campaign: string;
  blueprintId: string;
}

export interface LaunchRequest extends RunRef {
  /** The blueprint file on this machine; launchers copy it to the host. */
  blueprintFile: string;
  /** GPUs the scheduler chose (CUDA_VISIBLE_DEVICES); a queue daemon picks its own. */
  gpuIndices: number[];
  /** Where the run writes its result directory when it runs on this machine (local). */
  resultDir: string;
  /**
   * The most this run's worker may spend on model calls (its diagnosis of unknown
   * failures) when it cannot reach the campaign's ledger: on ssh and queue hosts it is
   * held to this, counted over its own `<result dir>/ledger.jsonl`. A run in the campaign
   * folder (local) is held to the campaign's live budget instead, and ignores it.
   */
  llmAllowance?: LlmAllowance;
  /**
   * The run was found lost: its status is live (or absent) and no finish.flag, but its
   * worker's process group is gone (killed with the leader, an OOM kill of the tree, a
   * closed terminal). With `revive`, a launcher that finds such a claim sets it aside and
   * starts a new worker on the same result directory, which re-attaches to the live
   * trainer or resumes it from its checkpoint. Without it a claim is never taken over
   * while it has a worker group on record, so `launch` stays idempotent.
   */
  revive?: boolean;
}

/** A share of the campaign's LLM budget: whole tokens, US dollars; either may be absent. */
export interface LlmAllowance {
  tokens?: number;
  usd?: number;
}

export interface LaunchOutcome {
  ref: RunRef;
  host: string;
  /** False when the run had already been launched: nothing new was started. */
  started: boolean;
  /** Process group of the run on its host, when known. */
  pgid: number | null;
}

/**
 * What a host says about a run. `launching`: accepted but no status.json yet;
 * `lost`: launched, not finished, and no process left to finish it; `unknown`: never
 * launched here (or forgotten by the host).
 */
export type ProgressState = RunState | "launching" | "lost" | "unknown";

export interface RunProgress {
  ref: RunRef;
  host: string;
  state: ProgressState;
  /** True once finish.flag exists: the result directory is complete and final. */
  finished: boolean;
  step: number | null;
  lastMetrics: Record<string, number> | null;
  heartbeatAt: string | null;
  /** When the current attempt started (status.json startedAt). */
  startedAt: string | null;
  reason: string | null;
  gpuIndices: number[];
  /** The last metrics records (a few), for progress display. */
  metricsTail: MetricsRecord[];
}

export interface FetchOutcome {
  /** Files written into the destination, relative to it. */
  files: string[];
  /** True when the copy is the final result directory. */
  complete: boolean;
}

export interface Launcher {
  readonly host: string;
  /** Its host kind (`kind:` in hosts.yaml; port/host-kind.ts). */
  readonly kind: string;
  launch(request: LaunchRequest): Promise<LaunchOutcome>;
  poll(ref: RunRef): Promise<RunProgress>;
  /** `poll` for many runs at once, in the same order; ssh answers them with one command. */
  pollMany(refs: RunRef[]): Promise<RunProgress[]>;
  fetch(ref: RunRef, destination: string): Promise<FetchOutcome>;
  cancel(ref: RunRef): Promise<boolean>;
  /**
   * Optional. Sets a finished run's folder aside on the host (renamed, never deleted) so
   * the same ref can be launched afresh: how a run stopped by `a3r stop` runs again when
   * its campaign is resumed. False when there was nothing to set aside; a run still going
   * is refused (stop it first). Hosts without it keep a stopped run stopped.
   */
  setAside?(ref: RunRef): Promise<boolean>;
  /**
   * Optional. Asks the run's worker to stop it and end it in `request.state`
   * (`stopped_early`): writes `stop-request.json` into the run's result directory on the
   * host, atomically (campaign/stop-request.ts); the worker reads it on its next poll,
   * stops the process groups (TERM, grace, KILL) and finishes the result directory. False
   * when the host knows no such run or it has finished already. Writing the same request
   * twice is harmless. local, ssh and slurm have it; queue does not (its daemon's result
   * folder is not reachable from the leader), so early stopping lets those runs finish.
   */
  requestStop?(ref: RunRef, request: StopRequest): Promise<boolean>;
  /** The runs this host knows (launched through any launcher instance). */
  list(): Promise<RunRef[]>;
  close(): Promise<void>;
}

/** BullMQ forbids ':' in custom job ids; '+' appears in neither campaign nor blueprint ids. */
export function runKey(ref: RunRef): string {
  return `${ref.campaign}+${ref.blueprintId}`;
}

export function parseRunKey(key: string): RunRef | undefined {
  const index = key.indexOf("+");
  if (index <= 0 || index === key.length - 1) return undefined;
  return { campaign: key.slice(0, index), blueprintId: key.slice(index + 1) };
}

/** The files of a result directory that travel back as the small bundle (queue) or live copy. */
// ledger.jsonl: the worker's own ledger, written when it could not reach the campaign's.
export const bundleFiles = [
  "status.json",
  "result.md",
  "metrics.jsonl",
  "attempts.md",
  "curves.svg",
  "events.jsonl",
  "blueprint.md",
  "ledger.jsonl",
  "finish.flag",
] as const;
export const liveFiles = ["status.json", "metrics.jsonl"] as const;
