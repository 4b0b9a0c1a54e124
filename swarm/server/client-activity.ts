/**
 * Which clients count as active for the agreement strategies (C4, C5): a client becomes
 * active once it has ended a rewarded episode and stays active while it keeps calling
 * (any request naming its client_uuid) within `client_idle_timeout`.
 *
 * Not tracked here: which episodes a client holds (the registry knows).
 */
export class ClientActivity {
  /**
   * Clients that have ended a rewarded episode, least recently seen first (a refresh moves a
   * client to the end), so pruning reads from the front and stops at the first recent one.
   * A client_uuid that never ended a rewarded episode is not recorded: anyone may name any
   * uuid on the open endpoints (can_continue_episode, a refused claim), and recording each
   * once let a flood of invented uuids grow the map and make every request scan it.
   */
  readonly #clients = new Map<string, { lastSeenAt: number; rewardedEpisodes: number; agreed: boolean }>();

  constructor(
    private readonly idleTimeoutMs: number,
    private readonly maxClients = defaultMaxClients,
  ) {}

  /** A request naming this client: keeps an active client active. */
  seen(clientUuid: string, now = Date.now()): void {
    const client = this.#clients.get(clientUuid);
    if (client) {
      this.#clients.delete(clientUuid);
      client.lastSeenAt = now;
      this.#clients.set(clientUuid, client);
    }
    this.#prune(now);
  }

  /** The client ended a rewarded episode: it is active from now on. */
  rewarded(clientUuid: string, now = Date.now()): void {
    const client = this.#clients.get(clientUuid) ?? { lastSeenAt: now, rewardedEpisodes: 0, agreed: false };
    client.rewardedEpisodes += 1;
    this.#clients.set(clientUuid, client);
    this.seen(clientUuid, now);
  }

  /** Only a recorded (rewarded) client's agreement counts; the coordinator checks it is active first. */
  agree(clientUuid: string, now = Date.now()): void {
    this.seen(clientUuid, now);
    const client = this.#clients.get(clientUuid);
    if (client) client.agreed = true;
  }

  /** Agreements are per step: cleared when the batch is taken. */
  resetAgreements(): void {
    for (const client of this.#clients.values()) client.agreed = false;
  }

  active(now = Date.now()): string[] {
    return [...this.#clients.entries()]
      .filter(([, client]) => client.rewardedEpisodes > 0 && now - client.lastSeenAt <= this.idleTimeoutMs)
      .map(([uuid]) => uuid);
  }

  agreed(): string[] {
    return [...this.#clients.entries()].filter(([, client]) => client.agreed).map(([uuid]) => uuid);
  }

  lastSeen(clientUuid: string): number | undefined {
    return this.#clients.get(clientUuid)?.lastSeenAt;
  }

  get size(): number {
    return this.#clients.size;
  }

  /** Forgets clients silent for ten idle timeouts, and the least recently seen past maxClients. */
  #prune(now: number): void {
    for (const [uuid, client] of this.#clients) {
      if (this.#clients.size <= this.maxClients && now - client.lastSeenAt <= this.idleTimeoutMs * 10) return;
      this.#clients.delete(uuid);
    }
  }
}

/** Far more clients than any swarm runs; bounds the memory a flood of rewarded episodes could take. */
const defaultMaxClients = 65_536;
