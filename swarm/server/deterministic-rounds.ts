import type { PoolProgress } from "./batching-strategies.ts";
import { NumberedEpisodes } from "./numbered-episodes.ts";

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
export class DeterministicRounds extends NumberedEpisodes {
  constructor(
    private readonly seed: number,
    private readonly numRepeat: number,
    /** The first number to hand out (a resumed run continues where its checkpoint's step ended). */
    next = 0,
  ) {
    super(next);
  }

  /** Episodes the current round has handed out or may still hand out. */
  get roundLimit(): number {
    return this.limit;
  }

  /** The round is complete and the batch not ready: let it hand out what the strategy misses. */
  extend(progress: PoolProgress): void {
    this.raise(missingEpisodes(progress, this.numRepeat));
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
