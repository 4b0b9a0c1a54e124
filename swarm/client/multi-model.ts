import { backoffDelay, sleep } from "./backoff.ts";
import type { EndEpisodeOptions, EpisodeHandle, SwarmClient } from "./swarm-client.ts";

/**
 * Multi-model swarms (the paper's non-shared-parameter setting): one episode whose agents
 * each talk to their own swarm server, so each server trains its own policy on its own
 * agent's reward. The helper holds one claim per server (role), hands each agent its own
 * base URL and episode key, and ends each server's episode with that agent's reward.
 *
 * No episode is ever left claimed: a failed claim gives back the claims already granted,
 * a body that throws aborts them all, and an end that fails on one server aborts that
 * server's episode (the others are still ended with their rewards).
 *
 * Why claims are taken in rounds: two servers that each wait for their claimed episodes to
 * drain (ROLLING_POST) before they grant new claims would deadlock if a half-claimed
 * episode held one server's claim while it waited for the other's. So a claim granted by
 * one server is held for at most `holdMs` while the others have not granted theirs; then
 * the round gives every claim back, backs off and tries again. Waiting with no claim held
 * (all servers busy) costs nothing and lasts as long as `maxWaitMs` allows.
 */

export type RoleClients<Role extends string> = Readonly<Record<Role, SwarmClient>>;

export interface MultiEpisodeOptions {
  type?: "train" | "eval";
  /** Seconds each server waits on a silent episode before it reclaims it (default 600). */
  discardEpisodeTimeout?: number;
  signal?: AbortSignal;
  /** Give up (and hold nothing) when the servers have not all granted a claim within this. */
  maxWaitMs?: number;
  /** How long a granted claim is held while another server has not granted its own (default 1000). */
  holdMs?: number;
  backoff?: { initialMs: number; maxMs: number };
}

export interface MultiEpisode<Role extends string> {
  readonly taskId: string;
  readonly roles: readonly Role[];
  /** Each role's own episode: its server's base URL and this episode's key on that server. */
  readonly handles: Readonly<Record<Role, EpisodeHandle>>;
  /**
   * Ends every role's episode on its own server with that role's outcome. Throws
   * MultiEpisodeEndError when some server refused (those episodes are aborted, not left
   * claimed) and a TypeError, aborting everything, when the roles do not match.
   */
  end(outcomes: Readonly<Record<Role, EndEpisodeOptions>>): Promise<void>;
  /** Aborts every role's episode that is not ended yet (never throws). */
  abort(): Promise<void>;
  /** True once end or abort has run. */
  readonly settled: boolean;
}

/** Some servers refused the end of their episode; `ended` lists the roles whose end went through. */
export class MultiEpisodeEndError extends Error {
  constructor(
    readonly failures: ReadonlyArray<{ role: string; error: unknown }>,
    readonly ended: readonly string[],
  ) {
    super(
      `end_episode failed for ${failures.map(({ role, error }) => `${role} (${error instanceof Error ? error.message : String(error)})`).join(", ")}; ` +
        `those episodes were aborted${ended.length ? `, ${ended.join(", ")} ended with their rewards` : ""}`,
    );
    this.name = "MultiEpisodeEndError";
  }
}

/** The servers did not all grant a claim within `maxWaitMs`; no claim is held. */
export class MultiEpisodeClaimTimeoutError extends Error {
  constructor(waitedMs: number, pending: readonly string[]) {
    super(`claim_episode: not every server granted a claim within ${waitedMs} ms (still waiting on ${pending.join(", ")}); no claim is held`);
    this.name = "MultiEpisodeClaimTimeoutError";
  }
}

/**
 * Claims one episode on every role's server for the task `taskId` (each server groups its
 * GRPO samples by it). Rejects with the first real refusal (SwarmFinishedError,
 * SwarmEngineFailedError, SwarmRequestError, the signal's reason) after giving back the
 * claims it got.
 */
export async function beginMultiEpisode<Role extends string>(
  clients: RoleClients<Role>,
  taskId: string,
  options: MultiEpisodeOptions = {},
): Promise<MultiEpisode<Role>> {
  const roles = Object.keys(clients) as Role[];
  if (roles.length === 0) throw new TypeError("beginMultiEpisode: give at least one role, e.g. { proposer: clientA, reviewer: clientB }");
  const started = Date.now();
  const backoff = options.backoff ?? { initialMs: 50, maxMs: 1000 };
  for (let round = 0; ; round += 1) {
    options.signal?.throwIfAborted();
    const remainingMs = options.maxWaitMs === undefined ? undefined : options.maxWaitMs - (Date.now() - started);
    const outcome = await claimRound(clients, roles, taskId, options, remainingMs);
    if (outcome.kind === "granted") return multiEpisode(clients, roles, taskId, outcome.handles);
    if (outcome.kind === "timed-out") throw new MultiEpisodeClaimTimeoutError(Date.now() - started, outcome.pending);
    await sleep(backoffDelay(round, backoff), options.signal);
  }
}

/**
 * Claims, runs `body` with each role's episode, and ends each server's episode with the
 * outcome `body` returns for its role; aborts them all when `body` throws (and rethrows).
 */
export async function runMultiEpisode<Role extends string, Result extends Readonly<Record<Role, EndEpisodeOptions>>>(
  clients: RoleClients<Role>,
  taskId: string,
  body: (handles: Readonly<Record<Role, EpisodeHandle>>) => Promise<Result>,
  options: MultiEpisodeOptions = {},
): Promise<Result> {
  const episode = await beginMultiEpisode(clients, taskId, options);
  let outcomes: Result;
  try {
    outcomes = await body(episode.handles);
  } catch (error) {
    await episode.abort();
    throw error;
  }
  await episode.end(outcomes);
  return outcomes;
}

type RoundOutcome<Role extends string> =
  | { kind: "granted"; handles: Record<Role, EpisodeHandle> }
  | { kind: "released" }
  | { kind: "timed-out"; pending: Role[] };

/** Why a round stopped its waiting claims (identity-compared, never shown to a user). */
const holdExpired = new Error("a claim was held for holdMs while another server had not granted");
const waitExpired = new Error("maxWaitMs elapsed");

async function claimRound<Role extends string>(
  clients: RoleClients<Role>,
  roles: readonly Role[],
  taskId: string,
  options: MultiEpisodeOptions,
  remainingMs: number | undefined,
): Promise<RoundOutcome<Role>> {
  const round = new AbortController();
  const signal = options.signal ? AbortSignal.any([round.signal, options.signal]) : round.signal;
  const timers: NodeJS.Timeout[] = [];
  if (remainingMs !== undefined) timers.push(setTimeout(() => round.abort(waitExpired), Math.max(0, remainingMs)));
  const granted = new Map<Role, EpisodeHandle>();
  let firstFailure: { error: unknown } | undefined;
  const claims = roles.map(async (role) => {
    try {
      const handle = await clients[role].beginEpisode({
        type: options.type ?? "train",
        discardEpisodeTimeout: options.discardEpisodeTimeout ?? 600,
        signal,
      });
      granted.set(role, handle);
      // The first grant starts the hold clock; the last one makes the round a success.
      if (granted.size === 1 && roles.length > 1) timers.push(setTimeout(() => round.abort(holdExpired), options.holdMs ?? 1000));
    } catch (error) {
      // Other servers must stop waiting at once: this episode cannot be played.
      if (error !== holdExpired && error !== waitExpired) firstFailure ??= { error };
      round.abort(error);
    }
  });
  await Promise.all(claims);
  for (const timer of timers) clearTimeout(timer);
  if (granted.size === roles.length) return { kind: "granted", handles: Object.fromEntries(granted) as Record<Role, EpisodeHandle> };
  await Promise.all([...granted].map(([role, handle]) => clients[role].abortEpisode(handle.episodeUuid, taskId).catch(() => undefined)));
  if (firstFailure) throw firstFailure.error;
  if (round.signal.reason === waitExpired) return { kind: "timed-out", pending: roles.filter((role) => !granted.has(role)) };
  return { kind: "released" };
}

function multiEpisode<Role extends string>(
  clients: RoleClients<Role>,
  roles: readonly Role[],
  taskId: string,
  handles: Record<Role, EpisodeHandle>,
): MultiEpisode<Role> {
  const open = new Set<Role>(roles);
  let settled = false;
  const abortOpen = async (): Promise<void> => {
    settled = true;
    const left = [...open];
    open.clear();
    await Promise.all(left.map((role) => clients[role].abortEpisode(handles[role].episodeUuid, taskId).catch(() => undefined)));
  };
  return {
    taskId,
    roles,
    handles,
    get settled() {
      return settled;
    },
    abort: abortOpen,
    async end(outcomes) {
      if (settled) throw new Error(`multi-model episode of task ${taskId} is already ended or aborted`);
      settled = true;
      const given = Object.keys(outcomes);
      const missing = roles.filter((role) => !given.includes(role));
      const unknown = given.filter((role) => !(roles as readonly string[]).includes(role));
      if (missing.length > 0 || unknown.length > 0) {
        await abortOpen();
        throw new TypeError(
          `multi-model episode of task ${taskId}: the outcomes must name exactly the roles ${roles.join(", ")}` +
            `${missing.length ? ` (missing ${missing.join(", ")})` : ""}${unknown.length ? ` (unknown ${unknown.join(", ")})` : ""}; every episode was aborted`,
        );
      }
      const results = await Promise.allSettled(roles.map((role) => clients[role].endEpisode(taskId, handles[role].episodeUuid, outcomes[role])));
      const failures: Array<{ role: Role; error: unknown }> = [];
      const ended: Role[] = [];
      results.forEach((result, index) => {
        const role = roles[index]!;
        if (result.status === "fulfilled") {
          ended.push(role);
          open.delete(role);
        } else failures.push({ role, error: result.reason });
      });
      if (failures.length === 0) return;
      await abortOpen();
      throw new MultiEpisodeEndError(failures, ended);
    },
  };
}
