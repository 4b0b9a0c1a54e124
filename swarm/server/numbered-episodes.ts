import type { EpisodeRegistry } from "./episode-registry.ts";

/**
 * Numbers handed to claims so that what an episode plays is fixed by its number, not by
 * which client claimed it or when: numbers below `limit` are handed out lowest first; a
 * claim that stops running without an end (aborted, reclaimed, closed) gives its number
 * back to be played again; an end uses it up. Deterministic mode's rounds
 * (deterministic-rounds.ts) and the fixed-protocol evaluation (protocol-eval.ts) both
 * number their episodes this way.
 */
export class NumberedEpisodes {
  #next: number;
  /** Numbers below this may be handed out. */
  #limit: number;
  /** Numbers handed out whose episodes ended without an end being recorded: played again, lowest first. */
  readonly #replay: number[] = [];
  /** Running (or just finished, not yet settled) claims and their numbers. */
  readonly #claimed = new Map<string, number>();

  constructor(next = 0, limit = next) {
    this.#next = next;
    this.#limit = limit;
  }

  /** The number the next fresh episode gets. */
  get nextIndex(): number {
    return this.#next;
  }

  /** Episodes handed out or that may still be handed out. */
  get limit(): number {
    return this.#limit;
  }

  /** Lets `count` more numbers be handed out. */
  raise(count: number): void {
    this.#limit += count;
  }

  /** A number for a new claim, or undefined when every number up to the limit is handed out. */
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

  /** The episode's number while it runs; undefined for unnumbered episodes. */
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
   * again, then says whether everything up to the limit has been handed out and has ended.
   */
  settle(registry: EpisodeRegistry): boolean {
    for (const [episodeUuid, index] of this.#claimed) {
      if (registry.find(episodeUuid)?.status === "running") continue;
      this.#claimed.delete(episodeUuid);
      insertSorted(this.#replay, index);
    }
    return this.#claimed.size === 0 && this.#replay.length === 0 && this.#next >= this.#limit;
  }
}

function insertSorted(list: number[], value: number): void {
  let at = list.length;
  while (at > 0 && list[at - 1]! > value) at -= 1;
  list.splice(at, 0, value);
}
