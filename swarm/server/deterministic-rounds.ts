import type { PoolProgress } from "./batching-strategies.ts";
import type { EpisodeRegistry } from "./episode-registry.ts";

/** What a train claim is told in deterministic mode: which episode of the run it plays. */
export interface DeterministicSlot {
  /** The episode's number in the run (0, 1, ...): its place in every batch order. */
  index: number;
  /** The seed the client draws its task from: the same for the N episodes of a group. */
  taskSeed: number;
}

/**
 * Deterministic mode (swarm.yaml `deterministic: true`; swarm/engines/README.md): the server,
 * not the clients' timing, decides which episodes a step trains on.
 *
 * Each step is a round of numbered episodes. A train claim is handed the next number (or
 * one whose earlier claim was aborted, reclaimed or closed: that episode is played again,
 * with the same task and seeds, so a lost claim changes nothing); past the round's quota,
 * claims wait. Episode i's task seed comes from the run's seed and i / num_repeat, its
 * completions' sampling seeds from the seed, i and the call's place in the episode. The
 * batch is decided only when every numbered episode of the round has ended (none running,
 * none to play again), over the pool ordered by number instead of arrival; if the strategy
 * is not ready then (C2's repeated task ids, C3's dummy groups), the quota grows by what is
 * missing, still under the same weights. So every episode of a round is sampled from the
 * weights of the step before it, and the batch is a function of the seed alone.
 */
export class DeterministicRounds {
  #next: number;
  /** Numbers below this may be handed out in the current round. */
  #limit: number;
  /** Numbers handed out whose episodes ended without a reward being recorded: played again, lowest first. */
  readonly #replay: number[] = [];
  /** Running (or just finished, not yet settled) claims and their numbers. */
  readonly #claimed = new Map<string, number>();

  constructor(
    private readonly seed: number,
    private readonly numRepeat: number,
    /** The first number to hand out (a resumed run continues where its checkpoint's step ended). */
    next = 0,
  ) {
    this.#next = next;
    this.#limit = next;
  }

  /** The number the next fresh episode gets (recorded in each step's metrics, for a resume). */
  get nextIndex(): number {
    return this.#next;
  }

  /** Episodes the current round has handed out or may still hand out. */
  get roundLimit(): number {
    return this.#limit;
  }

  /** A number for a new claim, or undefined when the round's quota is all handed out. */
  admit(): number | undefined {
    if (this.#replay.length > 0) return this.#replay.shift();
    if (this.#next >= this.#limit) return undefined;
    const index = this.#next;
    this.#next += 1;
    return index;
  }

  bind(episodeUuid: string, index: number): void {
    this.#claimed.set(episodeUuid, index);
  }

  /** A number admitted but not claimed (the registry refused the claim): the next claim gets it. */
  release(index: number): void {
    insertSorted(this.#replay, index);
  }

  /** The episode's number while it runs; undefined for eval or unnumbered episodes. */
  indexOf(episodeUuid: string): number | undefined {
    return this.#claimed.get(episodeUuid);
  }

  /** The episode ended (rewarded or not): its number is used up. Returns it. */
  consume(episodeUuid: string): number | undefined {
    const index = this.#claimed.get(episodeUuid);
    this.#claimed.delete(episodeUuid);
    return index;
  }

  /**
   * Sends the numbers of claims that stopped running without an end back to be played
   * again, then says whether the round is complete: everything admitted has ended.
   */
  settle(registry: EpisodeRegistry): boolean {
    for (const [episodeUuid, index] of this.#claimed) {
      if (registry.find(episodeUuid)?.status === "running") continue;
      this.#claimed.delete(episodeUuid);
      insertSorted(this.#replay, index);
    }
    return this.#claimed.size === 0 && this.#replay.length === 0 && this.#next >= this.#limit;
  }

  /** The round is complete and the batch not ready: let it hand out what the strategy misses. */
  extend(progress: PoolProgress): void {
    this.#limit += missingEpisodes(progress, this.numRepeat);
  }

  slot(index: number): DeterministicSlot {
    return { index, taskSeed: mix(this.seed, 0x7a5c, Math.floor(index / this.numRepeat)) % 2 ** 31 };
  }

  /** The sampling seed of the episode's `call`-th completion (a client's own seed is mixed in, not dropped). */
  samplingSeed(index: number, call: number, requested: number | undefined): number {
    return mix(mix(this.seed, index, call), requested === undefined ? 0 : 1, requested ?? 0);
  }
}

/** Episodes a round must add for the strategy's target, at least one group. */
export function missingEpisodes(progress: PoolProgress, numRepeat: number): number {
  const groups = (target: number, done: number): number => Math.max(1, target - done) * numRepeat;
  switch (progress.sample_collection_method) {
    case "rollout_until_finish_enough_episodes":
      return Math.max(numRepeat, progress.completed_episode_target - progress.completed_episodes);
    case "rollout_until_finish_enough_tasks":
      return groups(progress.completed_task_target, progress.completed_tasks);
    default:
      return groups(progress.completed_non_dummy_task_target, progress.completed_non_dummy_tasks);
  }
}

/** Inserts into an ascending list, keeping it sorted (the lowest number is replayed first). */
export function insertSorted(list: number[], value: number): void {
  let at = list.length;
  while (at > 0 && list[at - 1]! > value) at -= 1;
  list.splice(at, 0, value);
}

/** A 32-bit hash of three integers: murmur3's finalizer after each one. */
export function mix(a: number, b: number, c: number): number {
  let value = finalize(a ^ 0x9e3779b9);
  value = finalize(value ^ Math.imul(b, 0x85ebca6b));
  return finalize(value ^ Math.imul(c, 0xc2b2ae35));
}

function finalize(input: number): number {
  let value = input >>> 0;
  value ^= value >>> 16;
  value = Math.imul(value, 0x85ebca6b);
  value ^= value >>> 13;
  value = Math.imul(value, 0xc2b2ae35);
  value ^= value >>> 16;
  return value >>> 0;
}
