import { randomBytes, randomUUID } from "node:crypto";
import type { RecordedCall } from "../tracking/index.ts";

/**
 * Claimed episodes and their credentials. Each claim gets a fresh random API key that
 * works only while that episode is running: the key is revoked the moment the episode
 * ends, aborts, is reclaimed for idleness or is closed by a state change, so a stale
 * client can never write into another claim (AgentJet reused keys per slot).
 *
 * Not part of this module: sample pooling and training (sample-pool.ts, the trainer),
 * HTTP, and timers (the caller runs `reclaimIdle` periodically with its clock).
 */

export type EpisodeType = "train" | "eval";
export type EpisodeStatus = "running" | "ended" | "aborted" | "reclaimed" | "closed";

export interface Episode {
  episodeUuid: string;
  clientUuid: string;
  type: EpisodeType;
  apiKey: string;
  status: EpisodeStatus;
  claimedAt: number;
  lastActivityAt: number;
  discardTimeoutMs: number;
  /** Chat completions being generated right now; an episode is never idle while > 0. */
  inFlight: number;
  calls: RecordedCall[];
  /** Request bytes received for this episode (bounded by limits.max_episode_bytes). */
  receivedBytes: number;
  /** global_step when claimed (the policy version that answered it). */
  claimStep: number;
  /** The TCP connection the claim came on (claims are counted per connection too). */
  connectionId?: number;
  /** Claimed without a credential (no admin token): counted against max_unkeyed_claimers. */
  unkeyed: boolean;
  closedAt?: number;
  closeReason?: string;
  taskId?: string;
  reward?: number;
}

export type ClaimResult = { ok: true; episode: Episode } | { ok: false; failCause: string; perClientCap?: boolean };

export interface RegistryLimits {
  maxConcurrentEpisodes: number;
  maxHistory: number;
  /** Running episodes one client_uuid, and one connection, may hold (default maxConcurrentEpisodes). */
  maxPerClient?: number;
  /** Distinct client_uuids that may hold unkeyed episodes at once (default: no cap). */
  maxUnkeyedClaimers?: number;
}

export interface ClaimRequest {
  clientUuid: string;
  type: EpisodeType;
  discardTimeoutMs: number;
  step: number;
  taskId?: string | undefined;
  connectionId?: number | undefined;
  /** True when the claim carried no credential (PROTOCOL.md §7). */
  unkeyed?: boolean | undefined;
}

export interface RegistryCounters {
  claimed: number;
  ended: number;
  aborted: number;
  reclaimed: number;
  closed: number;
  /** Finished episodes forgotten because the history reached max_cached_episodes. */
  droppedFromHistory: number;
}

export class EpisodeRegistry {
  readonly #running = new Map<string, Episode>();
  readonly #byKey = new Map<string, Episode>();
  /** Finished episodes (without their calls), oldest first; bounded. */
  readonly #history = new Map<string, Episode>();
  /** Running episodes per client_uuid (the per-client claim cap reads it). */
  readonly #runningByClient = new Map<string, number>();
  /** Running episodes per connection, and per client_uuid among unkeyed claims. */
  readonly #runningByConnection = new Map<number, number>();
  readonly #unkeyedByClient = new Map<string, number>();
  /** Keys of finished episodes still in the history → their client (revoked for every use but naming the caller). */
  readonly #historyKeyOwners = new Map<string, string>();
  readonly counters: RegistryCounters = { claimed: 0, ended: 0, aborted: 0, reclaimed: 0, closed: 0, droppedFromHistory: 0 };

  constructor(private readonly limits: RegistryLimits) {}

  claim(request: ClaimRequest, now = Date.now()): ClaimResult {
    const refusal = this.#capRefusal(request);
    if (refusal) return { ok: false, perClientCap: true, failCause: refusal };
    if (this.#running.size >= this.limits.maxConcurrentEpisodes) {
      return { ok: false, failCause: `max_env_worker reached (${this.limits.maxConcurrentEpisodes} episodes running); retry later` };
    }
    const episode: Episode = {
      episodeUuid: randomUUID(),
      clientUuid: request.clientUuid,
      type: request.type,
      apiKey: `sk-swarm-${randomBytes(24).toString("base64url")}`,
      status: "running",
      claimedAt: now,
      lastActivityAt: now,
      discardTimeoutMs: request.discardTimeoutMs,
      inFlight: 0,
      calls: [],
      receivedBytes: 0,
      claimStep: request.step,
      unkeyed: request.unkeyed === true,
      ...(request.taskId ? { taskId: request.taskId } : {}),
      ...(request.connectionId === undefined ? {} : { connectionId: request.connectionId }),
    };
    this.#running.set(episode.episodeUuid, episode);
    bump(this.#runningByClient, episode.clientUuid, 1);
    if (episode.connectionId !== undefined) bump(this.#runningByConnection, episode.connectionId, 1);
    if (episode.unkeyed) bump(this.#unkeyedByClient, episode.clientUuid, 1);
    this.#byKey.set(episode.apiKey, episode);
    this.counters.claimed += 1;
    return { ok: true, episode };
  }

  /**
   * The caps one claimer meets before the server-wide one, so that a client flooding claims
   * hears that it is the problem: per client_uuid, per connection (inventing client ids on
   * one connection does not help), and the number of distinct unkeyed claimers (inventing
   * ids over many connections does not either).
   */
  #capRefusal(request: ClaimRequest): string | undefined {
    const perClient = this.limits.maxPerClient ?? this.limits.maxConcurrentEpisodes;
    const held = this.#runningByClient.get(request.clientUuid) ?? 0;
    if (held >= perClient)
      return `max_claims_per_client reached: this client_uuid already holds ${held} running episodes (cap ${perClient}); end or abort one first`;
    const onConnection = request.connectionId === undefined ? 0 : (this.#runningByConnection.get(request.connectionId) ?? 0);
    if (onConnection >= perClient)
      return `max_claims_per_client reached on this connection: it already holds ${onConnection} running episodes under any client_uuid (cap ${perClient}); end or abort one first`;
    const cap = this.limits.maxUnkeyedClaimers;
    if (request.unkeyed && cap !== undefined && !this.#unkeyedByClient.has(request.clientUuid) && this.#unkeyedByClient.size >= cap)
      return `max_unkeyed_claimers reached: ${this.#unkeyedByClient.size} client_uuids already hold episodes claimed without a credential (cap ${cap}); retry when one finishes, or give the server an admin token and send it with claims`;
    return undefined;
  }

  /** Distinct client_uuids holding unkeyed running episodes (pool information shows it). */
  get unkeyedClaimers(): number {
    return this.#unkeyedByClient.size;
  }

  /** The running episode a key belongs to; undefined once it is revoked. */
  byApiKey(apiKey: string): Episode | undefined {
    return this.#byKey.get(apiKey);
  }

  /**
   * The client_uuid a key was issued to, while its episode runs or is remembered in the
   * history: what get_episode_buffer and replay_latest_llm_call accept as "who is asking".
   * A revoked key still names its owner there, and nothing else.
   */
  ownerOfKey(apiKey: string): string | undefined {
    return this.#byKey.get(apiKey)?.clientUuid ?? this.#historyKeyOwners.get(apiKey);
  }

  running(episodeUuid: string): Episode | undefined {
    return this.#running.get(episodeUuid);
  }

  /** A running or remembered finished episode. */
  find(episodeUuid: string): Episode | undefined {
    return this.#running.get(episodeUuid) ?? this.#history.get(episodeUuid);
  }

  /** Running episodes of one client. */
  runningCountOf(clientUuid: string): number {
    return this.#runningByClient.get(clientUuid) ?? 0;
  }

  runningEpisodes(): Episode[] {
    return [...this.#running.values()];
  }

  get runningCount(): number {
    return this.#running.size;
  }

  historyEpisodes(): Episode[] {
    return [...this.#history.values()];
  }

  touch(episode: Episode, now = Date.now()): void {
    episode.lastActivityAt = now;
  }

  /**
   * Ends a running episode: revokes its key at once, frees its calls (the caller has
   * taken what it needs), and moves it into the bounded history.
   */
  finish(episodeUuid: string, status: Exclude<EpisodeStatus, "running">, reason: string, now = Date.now()): Episode | undefined {
    const episode = this.#running.get(episodeUuid);
    if (!episode) return undefined;
    this.#running.delete(episodeUuid);
    this.#byKey.delete(episode.apiKey);
    bump(this.#runningByClient, episode.clientUuid, -1);
    if (episode.connectionId !== undefined) bump(this.#runningByConnection, episode.connectionId, -1);
    if (episode.unkeyed) bump(this.#unkeyedByClient, episode.clientUuid, -1);
    episode.status = status;
    episode.closedAt = now;
    episode.closeReason = reason;
    episode.calls = [];
    this.counters[countersKey[status]] += 1;
    this.#history.set(episodeUuid, episode);
    this.#historyKeyOwners.set(episode.apiKey, episode.clientUuid);
    while (this.#history.size > this.limits.maxHistory) {
      const oldest = this.#history.keys().next().value as string;
      this.#historyKeyOwners.delete(this.#history.get(oldest)!.apiKey);
      this.#history.delete(oldest);
      this.counters.droppedFromHistory += 1;
    }
    return episode;
  }

  /** Reclaims running episodes idle past their discard timeout; returns them. */
  reclaimIdle(now = Date.now()): Episode[] {
    const reclaimed: Episode[] = [];
    for (const episode of [...this.#running.values()]) {
      if (episode.inFlight > 0) continue;
      const idleMs = now - episode.lastActivityAt;
      if (idleMs > episode.discardTimeoutMs) {
        this.finish(
          episode.episodeUuid,
          "reclaimed",
          `idle for ${Math.round(idleMs / 1000)} s (discard_episode_timeout ${episode.discardTimeoutMs / 1000} s)`,
          now,
        );
        reclaimed.push(episode);
      }
    }
    return reclaimed;
  }

  /** Closes every running episode (the engine left the rolling states). */
  closeAll(reason: string, now = Date.now()): Episode[] {
    return [...this.#running.keys()].map((uuid) => this.finish(uuid, "closed", reason, now)!);
  }
}

/** Adds `by` to a count, forgetting it at zero (the maps stay as small as what runs). */
function bump<K>(counts: Map<K, number>, key: K, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}

const countersKey = { ended: "ended", aborted: "aborted", reclaimed: "reclaimed", closed: "closed" } as const satisfies Record<
  Exclude<EpisodeStatus, "running">,
  keyof RegistryCounters
>;
