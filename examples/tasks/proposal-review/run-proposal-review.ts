import OpenAI from "openai";
import { runMultiEpisode, SwarmEngineFailedError, SwarmFinishedError, type SwarmClient } from "../../../swarm/client/index.ts";
import { playEpisode, roles, sampleTask, type Role } from "./proposal-review.ts";
import { askThroughOpenAI } from "../task-types.ts";

/**
 * Runs proposal–review episodes against two swarm servers, one per role: each episode is
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

export interface ProposalReviewSummary {
  requested: number;
  completed: number;
  failed: number;
  /** Mean reward of each role over the completed episodes. */
  rewardMean: Record<Role, number>;
  stoppedEarly?: string;
  engineFailed?: string;
  /** The first few failures' messages (the full count is `failed`). */
  failures: string[];
}

export async function runProposalReview(options: ProposalReviewRunOptions): Promise<ProposalReviewSummary> {
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const numRepeat = Math.max(1, options.numRepeat ?? (await largestNumRepeat(options.clients)));
  const seed = options.seed ?? Math.floor(Math.random() * 1_000_000_000);
  const sums: Record<Role, number> = { proposer: 0, reviewer: 0 };
  const failures: string[] = [];
  let next = 0,
    completed = 0,
    failed = 0;
  let stoppedEarly: string | undefined;
  let engineFailed: string | undefined;

  const one = async (index: number): Promise<void> => {
    const task = sampleTask(seed + Math.floor(index / numRepeat));
    let record: EpisodeRecord;
    try {
      // One claim per server; each role's call goes to its own server with its own key;
      // one end per server with that role's reward (everything aborted if the body throws).
      const outcomes = await runMultiEpisode(
        options.clients,
        task.taskId,
        async (handles) => {
          const openai = (role: Role): OpenAI => new OpenAI({ baseURL: handles[role].baseUrl, apiKey: handles[role].apiKey, maxRetries: 1 });
          return (await playEpisode(task, { proposer: askThroughOpenAI(openai("proposer")), reviewer: askThroughOpenAI(openai("reviewer")) })).outcomes;
        },
        { discardEpisodeTimeout: options.discardEpisodeTimeout ?? 600, ...(options.signal ? { signal: options.signal } : {}) },
      );
      completed += 1;
      for (const role of roles) sums[role] += outcomes[role].reward;
      record = { index, taskId: task.taskId, ok: true, rewards: { proposer: outcomes.proposer.reward, reviewer: outcomes.reviewer.reward } };
    } catch (error) {
      if (error instanceof SwarmFinishedError || error instanceof SwarmEngineFailedError || options.signal?.aborted) {
        stoppedEarly ??= options.signal?.aborted ? "aborted" : error instanceof Error ? error.message : String(error);
        if (error instanceof SwarmEngineFailedError) engineFailed ??= error.detail;
        return;
      }
      failed += 1;
      const message = error instanceof Error ? error.message : String(error);
      if (failures.length < 20) failures.push(message);
      record = { index, taskId: task.taskId, ok: false, error: message };
    }
    options.onEpisode?.(completed + failed, record);
  };

  const lane = async (): Promise<void> => {
    while (next < options.episodes && stoppedEarly === undefined && !options.signal?.aborted) {
      const index = next;
      next += 1;
      await one(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, options.episodes) }, lane));
  const mean = (role: Role): number => (completed === 0 ? 0 : sums[role] / completed);
  return {
    requested: options.episodes,
    completed,
    failed,
    rewardMean: { proposer: mean("proposer"), reviewer: mean("reviewer") },
    ...(stoppedEarly === undefined ? {} : { stoppedEarly }),
    ...(engineFailed === undefined ? {} : { engineFailed }),
    failures,
  };
}

async function largestNumRepeat(clients: Readonly<Record<Role, SwarmClient>>): Promise<number> {
  const values = await Promise.all(roles.map(async (role) => (await clients[role].poolInformation()).task_expected_num_repeat));
  return Math.max(1, ...values.map((value) => (typeof value === "number" && value > 0 ? value : 1)));
}
