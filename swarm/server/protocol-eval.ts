import type { DeterministicSlot } from "./deterministic-rounds.ts";
import { mix } from "./deterministic-rounds.ts";
import { NumberedEpisodes } from "./numbered-episodes.ts";
import type { EpisodeRegistry } from "./episode-registry.ts";

/** The sampling every fixed-protocol eval episode uses, whatever its client asks. */
export interface ProtocolSampling {
  temperature: number;
  topP: number;
  maxTokens: number;
}

export interface ProtocolEvalSettings {
  /** Training steps after which the weights are evaluated (swarm.yaml `eval_protocol.at_steps`), and every multiple of `every`. */
  atSteps: readonly number[];
  every: number | undefined;
  episodes: number;
  /** The task set's seed: the same seed gives the same tasks at every evaluation and in every run. */
  seed: number;
  sampling: ProtocolSampling;
}

/** What one evaluation measured, recorded in the step's metrics. */
export interface ProtocolEvalResult {
  step: number;
  rewardMean: number | undefined;
  /** Episodes that ended with a reward (one ended with `reward: null` uses its number up). */
  episodes: number;
}

/**
 * Fixed-protocol evaluation (swarm.yaml `eval_protocol`). A knob that changes sampling
 * changes how the training reward is measured: a run at temperature 0.3 scores its own
 * greedier samples, so its rollout_reward_mean is higher without the policy being better.
 * An evaluation here measures every run the same way: after each planned step, the
 * weights of that step answer `episodes` numbered eval episodes, one task each, drawn
 * from the protocol's seed (so the same tasks at every evaluation and in every
 * configuration with that seed), at one fixed sampling, with per-call sampling seeds
 * from (seed, number, call), and never trained on.
 *
 * While an evaluation runs, every claim is handed one of its episodes (a claim cannot
 * train the weights being measured); a lost claim's number is played again, as in
 * deterministic mode (numbered-episodes.ts). Rewards are summed in value order, so the mean does not depend on
 * which episode ended first.
 */
export class ProtocolEval {
  readonly #atSteps: ReadonlySet<number>;
  /** The step whose weights are being evaluated; undefined between evaluations. */
  #step: number | undefined;
  /** The evaluation's episodes, numbered 0 .. episodes - 1. */
  #numbers = new NumberedEpisodes();
  #rewards: number[] = [];

  constructor(readonly settings: ProtocolEvalSettings) {
    this.#atSteps = new Set(settings.atSteps);
  }

  /** Whether the weights after this training step are evaluated. */
  plannedAfter(step: number): boolean {
    const every = this.settings.every;
    return this.#atSteps.has(step) || (every !== undefined && step > 0 && step % every === 0);
  }

  /** The step being evaluated, or undefined when no evaluation runs. */
  get runningFor(): number | undefined {
    return this.#step;
  }

  open(step: number): void {
    this.#step = step;
    this.#numbers = new NumberedEpisodes(0, this.settings.episodes);
    this.#rewards = [];
  }

  /** The number a new claim plays, or undefined when every episode is handed out. */
  admit(): number | undefined {
    return this.#step === undefined ? undefined : this.#numbers.admit();
  }

  bind(episodeUuid: string, index: number): void {
    this.#numbers.bind(episodeUuid, index);
  }

  /** A number admitted whose claim the registry refused: the next claim gets it. */
  release(index: number): void {
    this.#numbers.release(index);
  }

  owns(episodeUuid: string): boolean {
    return this.#numbers.indexOf(episodeUuid) !== undefined;
  }

  slot(index: number): DeterministicSlot {
    return { index, taskSeed: mix(this.settings.seed, 0xe7a1, index) % 2 ** 31 };
  }

  /** The sampling seed of an evaluation episode's `call`-th completion; undefined for other episodes. */
  samplingSeed(episodeUuid: string, call: number): number | undefined {
    const index = this.#numbers.indexOf(episodeUuid);
    return index === undefined ? undefined : mix(mix(this.settings.seed, 0x5eed, index), call, 0);
  }

  /** The episode ended: with a reward it counts, with `null` its number is used up. */
  record(episodeUuid: string, reward: number | null): void {
    if (this.#numbers.consume(episodeUuid) !== undefined && reward !== null) this.#rewards.push(reward);
  }

  /** Sends the numbers of claims that stopped running without an end back to be played; true when every episode has ended. */
  settle(registry: EpisodeRegistry): boolean {
    return this.#step !== undefined && this.#numbers.settle(registry);
  }

  /** What the evaluation measured so far; ends it. */
  close(): ProtocolEvalResult {
    const step = this.#step ?? 0;
    const sorted = [...this.#rewards].sort((a, b) => a - b);
    this.#step = undefined;
    this.#numbers = new NumberedEpisodes();
    return {
      step,
      rewardMean: sorted.length > 0 ? sorted.reduce((sum, value) => sum + value, 0) / sorted.length : undefined,
      episodes: sorted.length,
    };
  }
}
