/**
 * Which clients count as active for the agreement strategies (C4, C5): a client becomes
 * active once it has ended a rewarded episode and stays active while it keeps calling
 * (any request naming its client_uuid) within `client_idle_timeout`.
 *
 * Not tracked here: which episodes a client holds (the registry knows).
 */
export class ClientActivity {
  readonly #clients = new Map<string, { lastSeenAt: number; rewardedEpisodes: number; agreed: boolean }>();

  constructor(private readonly idleTimeoutMs: number) {}

  seen(clientUuid: string, now = Date.now()): void {
    const client = this.#clients.get(clientUuid);
    if (client) client.lastSeenAt = now;
    else this.#clients.set(clientUuid, { lastSeenAt: now, rewardedEpisodes: 0, agreed: false });
    this.#prune(now);
  }

  rewarded(clientUuid: string, now = Date.now()): void {
    this.seen(clientUuid, now);
    this.#clients.get(clientUuid)!.rewardedEpisodes += 1;
  }

  agree(clientUuid: string, now = Date.now()): void {
    this.seen(clientUuid, now);
    this.#clients.get(clientUuid)!.agreed = true;
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

  /** Forgets clients silent for ten idle timeouts, so the map stays bounded. */
  #prune(now: number): void {
    if (this.#clients.size < 1024) return;
    for (const [uuid, client] of this.#clients) {
      if (now - client.lastSeenAt > this.idleTimeoutMs * 10) this.#clients.delete(uuid);
    }
  }
}
