import { runMultiEpisodes, type MultiRunSummary, type SwarmClient } from "../../../swarm/client/index.ts";
import type { Role } from "./proposal-review.ts";
import task from "./task.ts";

/**
 * Runs proposal–review episodes against two swarm servers, one per role (the SDK's
 * runMultiEpisodes, as `a3r swarm client proposal-review` does): each episode is
 * one claim on each server (the SDK's multi-model helper), the proposer's call through the
 * proposer server with its episode key, the reviewer's through the reviewer server with
 * its own, and one end per server with that role's reward. An episode that fails is
 * aborted on both servers and the run goes on; the run stops early when either server has
 * finished training or its engine failed (no episode can be played without both).
 */
export interface ProposalReviewRunOptions {
  clients: Readonly<Record<Role, SwarmClient>>;
  episodes: number;
  concurrency?: number;
  /** Seed of the first task; the tasks of episodes i·N … i·N+N-1 share one seed (a GRPO group on each server). */
  seed?: number;
  /** Episodes per task in a row (default: the larger of the two servers' num_repeat). */
  numRepeat?: number;
  discardEpisodeTimeout?: number;
  onEpisode?: (done: number, outcome: EpisodeRecord) => void;
  signal?: AbortSignal;
}

export interface EpisodeRecord {
  index: number;
  taskId: string;
  ok: boolean;
  rewards?: Record<Role, number>;
  error?: string;
}

/** The run's counts and each role's mean reward (the client's summary, for this task's roles). */
export type ProposalReviewSummary = MultiRunSummary<Role>;

export async function runProposalReview(options: ProposalReviewRunOptions): Promise<ProposalReviewSummary> {
  return runMultiEpisodes({
    clients: options.clients,
    task,
    episodes: options.episodes,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(options.numRepeat === undefined ? {} : { numRepeat: options.numRepeat }),
    discardEpisodeTimeout: options.discardEpisodeTimeout ?? 600,
    ...(options.onEpisode ? { onEpisode: options.onEpisode } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
