import type { TrainingSample } from "../engines/port/engine.ts";
import type { PoolEpisode } from "./batching-strategies.ts";

/** One finished train episode waiting in the pool, with its merged samples. */
export interface PooledEpisode extends PoolEpisode {
  clientUuid: string;
  isSuccess: boolean | undefined;
  samples: TrainingSample[];
  stats: { calls: number; samples: number; tokensWithoutMerge: number; tokensWithMerge: number };
  logMetrics: Record<string, number>;
  completedAt: number;
}

/**
 * Finished train episodes keyed by task id, waiting for the batching strategy. Bounded:
 * past `maxEpisodes` the oldest episodes are dropped and counted (`dropped`), never kept
 * silently (AgentJet's cache grew without bound).
 *
 * Not decided here: which episodes form a batch (batching-strategies.ts).
 */
export class SamplePool {
  readonly #episodes = new Map<string, PooledEpisode>();
  #sequence = 0;
  dropped = 0;
  discarded = 0;

  constructor(private readonly maxEpisodes: number) {}

  nextSequence(): number {
    this.#sequence += 1;
    return this.#sequence;
  }

  add(episode: PooledEpisode): void {
    this.#episodes.set(episode.episodeUuid, episode);
    while (this.#episodes.size > this.maxEpisodes) {
      this.#episodes.delete(this.#episodes.keys().next().value as string);
      this.dropped += 1;
    }
  }

  summaries(): PoolEpisode[] {
    return [...this.#episodes.values()].map(({ episodeUuid, taskId, reward, sequence, clientUuid }) => ({ episodeUuid, taskId, reward, sequence, clientUuid }));
  }

  /** Distinct task ids one client has waiting in the pool (the claim-side task throttle). */
  taskIdsOf(clientUuid: string): Set<string> {
    const tasks = new Set<string>();
    for (const episode of this.#episodes.values()) if (episode.clientUuid === clientUuid) tasks.add(episode.taskId);
    return tasks;
  }

  get size(): number {
    return this.#episodes.size;
  }

  /** Removes and returns the named episodes, in the order given. */
  take(episodeUuids: readonly string[]): PooledEpisode[] {
    const taken: PooledEpisode[] = [];
    for (const uuid of episodeUuids) {
      const episode = this.#episodes.get(uuid);
      if (!episode) continue;
      this.#episodes.delete(uuid);
      taken.push(episode);
    }
    return taken;
  }

  discard(episodeUuids: readonly string[]): void {
    this.discarded += this.take(episodeUuids).length;
  }

  /** Per task: its episode uuids and their rewards, in completion order (pool information). */
  taskDetails(): { episodes: Record<string, string[]>; clients: Record<string, string[]>; rewards: Record<string, number[]> } {
    const episodes: Record<string, string[]> = {};
    const clients: Record<string, string[]> = {};
    const rewards: Record<string, number[]> = {};
    for (const episode of [...this.#episodes.values()].sort((a, b) => a.sequence - b.sequence)) {
      (episodes[episode.taskId] ??= []).push(episode.episodeUuid);
      (clients[episode.taskId] ??= []).push(episode.clientUuid);
      (rewards[episode.taskId] ??= []).push(episode.reward);
    }
    return { episodes, clients, rewards };
  }

  /** Empties the pool: pooled samples came from the policy before a resume or restart. */
  clear(): void {
    this.#episodes.clear();
  }
}
