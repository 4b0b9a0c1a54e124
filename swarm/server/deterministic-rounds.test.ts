import { describe, expect, it } from "vitest";
import { decideBatch, type PoolEpisode } from "./batching-strategies.ts";
import { DeterministicRounds, missingEpisodes } from "./deterministic-rounds.ts";
import { EpisodeRegistry } from "./episode-registry.ts";

const registry = (): EpisodeRegistry => new EpisodeRegistry({ maxConcurrentEpisodes: 64, maxHistory: 100 });
const claim = (episodes: EpisodeRegistry) => {
  const result = episodes.claim({ clientUuid: "c", type: "train", discardTimeoutMs: 60_000, step: 0 });
  if (!result.ok) throw new Error(result.failCause);
  return result.episode;
};
const progress = (method: "rollout_until_finish_enough_episodes" | "rollout_until_finish_enough_tasks", episodes: PoolEpisode[]) =>
  decideBatch({ method, trainBatchSize: 2, numRepeat: 2, episodes, activeClients: [], agreedClients: [] }).progress;

describe("deterministic rounds", () => {
  it("hands out each number of the round once, then waits until what is missing is added", () => {
    const rounds = new DeterministicRounds(1, 2);
    const episodes = registry();
    expect(rounds.admit()).toBeUndefined();
    expect(rounds.settle(episodes)).toBe(true);
    rounds.extend(progress("rollout_until_finish_enough_episodes", []));
    const handed = [rounds.admit(), rounds.admit(), rounds.admit(), rounds.admit(), rounds.admit()];
    expect(handed).toEqual([0, 1, 2, 3, undefined]);
    const claims = handed.slice(0, 4).map((index) => {
      const episode = claim(episodes);
      rounds.bind(episode.episodeUuid, index!);
      return episode;
    });
    expect(rounds.settle(episodes)).toBe(false);
    for (const episode of claims) {
      expect(rounds.consume(episode.episodeUuid)).toBeDefined();
      episodes.finish(episode.episodeUuid, "ended", "rewarded");
    }
    expect(rounds.settle(episodes)).toBe(true);
    expect(rounds.nextIndex).toBe(4);
    // C2 with the two groups on one task id: one task short, so one more group of 2.
    const pool = [0, 1, 2, 3].map((index) => ({ episodeUuid: `e${index}`, taskId: "same", reward: index % 2, sequence: index }));
    rounds.extend(progress("rollout_until_finish_enough_tasks", pool));
    expect([rounds.admit(), rounds.admit(), rounds.admit()]).toEqual([4, 5, undefined]);
  });

  it("plays an aborted or reclaimed claim's number again, lowest first, before any new one", () => {
    const rounds = new DeterministicRounds(1, 2);
    const episodes = registry();
    rounds.extend(progress("rollout_until_finish_enough_episodes", []));
    const claims = [0, 1, 2].map((index) => {
      const episode = claim(episodes);
      rounds.bind(episode.episodeUuid, rounds.admit()!);
      return { episode, index };
    });
    episodes.finish(claims[2]!.episode.episodeUuid, "aborted", "aborted by its client");
    episodes.finish(claims[1]!.episode.episodeUuid, "reclaimed", "idle");
    expect(rounds.settle(episodes)).toBe(false);
    expect([rounds.admit(), rounds.admit(), rounds.admit(), rounds.admit()]).toEqual([1, 2, 3, undefined]);
    // A claim the registry refused gives its number back.
    rounds.release(3);
    expect(rounds.admit()).toBe(3);
  });

  it("derives task seeds per group and sampling seeds per episode, call and run seed", () => {
    const rounds = new DeterministicRounds(7, 4);
    expect(rounds.slot(0).taskSeed).toBe(rounds.slot(3).taskSeed);
    expect(rounds.slot(4).taskSeed).not.toBe(rounds.slot(3).taskSeed);
    expect(new DeterministicRounds(8, 4).slot(0).taskSeed).not.toBe(rounds.slot(0).taskSeed);
    expect(rounds.slot(5).taskSeed).toBeLessThan(2 ** 31);
    const seeds = new Set([
      rounds.samplingSeed(0, 0, undefined),
      rounds.samplingSeed(1, 0, undefined),
      rounds.samplingSeed(0, 1, undefined),
      rounds.samplingSeed(0, 0, 0),
    ]);
    expect(seeds.size).toBe(4);
    expect(rounds.samplingSeed(2, 1, undefined)).toBe(new DeterministicRounds(7, 4).samplingSeed(2, 1, undefined));
  });

  it("asks for at least one group, and for C1 the episodes the batch lacks", () => {
    expect(missingEpisodes(progress("rollout_until_finish_enough_episodes", []), 2)).toBe(4);
    const full = [0, 1, 2, 3].map((index) => ({ episodeUuid: `e${index}`, taskId: `t${index >> 1}`, reward: index % 2, sequence: index }));
    expect(missingEpisodes(progress("rollout_until_finish_enough_tasks", full), 2)).toBe(2);
  });
});
