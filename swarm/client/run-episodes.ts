import type OpenAI from "openai";
import { SwarmEngineFailedError, SwarmFinishedError, type SwarmClient } from "./swarm-client.ts";

/**
 * What the runner needs from a task module (examples/tasks/<name>/task.ts default-exports
 * one): draw a task from a seed, and play one episode through an OpenAI client.
 */
export interface EpisodeTask<T extends { taskId: string } = { taskId: string; [key: string]: unknown }> {
  name: string;
  sampleTask(seed: number): T;
  runEpisode(openai: OpenAI, task: T): Promise<{ reward: number; isSuccess: boolean; logMetrics?: Record<string, number> }>;
}

export interface EpisodeOutcome {
  index: number;
  taskId: string;
  episodeUuid: string;
  ok: boolean;
  reward?: number;
  isSuccess?: boolean;
  error?: string;
  durationMs: number;
}

export interface RunProgress {
  done: number;
  total: number;
  failed: number;
  running: number;
  rewardMean: number;
  last: EpisodeOutcome;
}

export interface RunSummary {
  requested: number;
  completed: number;
  failed: number;
  rewardMean: number;
  successRate: number;
  /** Why the run ended before `episodes` (e.g. training finished), when it did. */
  stoppedEarly?: string;
  /** Set when the run stopped because the server's engine failed (a failure, unlike finishing). */
  engineFailed?: string;
  outcomes: EpisodeOutcome[];
}

export interface RunEpisodesOptions<T extends { taskId: string }> {
  client: SwarmClient;
  task: EpisodeTask<T>;
  episodes: number;
  concurrency?: number;
  /** Episodes per task in a row, so GRPO groups fill (default: the server's num_repeat). */
  numRepeat?: number;
  /** Seed of the first task; task i uses seed + i (default: random). */
  seed?: number;
  episodeType?: "train" | "eval";
  discardEpisodeTimeout?: number;
  onProgress?: (progress: RunProgress) => void;
  signal?: AbortSignal;
}

/**
 * Runs `episodes` episodes with `concurrency` at a time. Each one: sampleTask (from the
 * claim's task seed when the server is deterministic) → claim →
 * a fresh `OpenAI({ baseURL, apiKey })` for that episode → task.runEpisode → end_episode
 * with the reward; any exception aborts the episode (so the server never waits on it)
 * and counts as a failure, and the run goes on. Stops early when training has finished.
 */
export async function runEpisodes<T extends { taskId: string }>(options: RunEpisodesOptions<T>): Promise<RunSummary> {
  const { client, task } = options;
  const concurrency = Math.max(1, options.concurrency ?? 1);
  const numRepeat = Math.max(1, options.numRepeat ?? (await serverNumRepeat(client)));
  const seed = options.seed ?? Math.floor(Math.random() * 1_000_000_000);
  const outcomes: EpisodeOutcome[] = [];
  let next = 0;
  let running = 0;
  let stoppedEarly: string | undefined;
  let engineFailed: string | undefined;

  const one = async (index: number): Promise<void> => {
    const started = Date.now();
    let sampled = task.sampleTask(seed + Math.floor(index / numRepeat));
    let episodeUuid = "";
    let outcome: EpisodeOutcome;
    try {
      const handle = await client.beginEpisode({
        type: options.episodeType ?? "train",
        discardEpisodeTimeout: options.discardEpisodeTimeout ?? 600,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      episodeUuid = handle.episodeUuid;
      // A deterministic server numbers the run's episodes and names each one's task seed, so
      // which client process plays which episode, and when, does not matter.
      if (handle.slot) sampled = task.sampleTask(handle.slot.taskSeed);
      running += 1;
      try {
        const openai = new (await openAiClass())({ baseURL: handle.baseUrl, apiKey: handle.apiKey, maxRetries: 1 });
        const result = await task.runEpisode(openai, sampled);
        await client.endEpisode(sampled.taskId, episodeUuid, {
          reward: result.reward,
          isSuccess: result.isSuccess,
          ...(result.logMetrics ? { logMetrics: result.logMetrics } : {}),
        });
        outcome = {
          index,
          taskId: sampled.taskId,
          episodeUuid,
          ok: true,
          reward: result.reward,
          isSuccess: result.isSuccess,
          durationMs: Date.now() - started,
        };
      } finally {
        running -= 1;
      }
    } catch (error) {
      if (error instanceof SwarmFinishedError) {
        stoppedEarly = error.message;
        return;
      }
      if (error instanceof SwarmEngineFailedError) {
        stoppedEarly = error.message;
        engineFailed = error.detail;
        return;
      }
      if (options.signal?.aborted) {
        stoppedEarly = "aborted";
        if (episodeUuid) await client.abortEpisode(episodeUuid, sampled.taskId).catch(() => undefined);
        return;
      }
      if (episodeUuid) await client.abortEpisode(episodeUuid, sampled.taskId).catch(() => undefined);
      outcome = {
        index,
        taskId: sampled.taskId,
        episodeUuid,
        ok: false,
        error: error instanceof Error ? error.message : String(error),
        durationMs: Date.now() - started,
      };
    }
    outcomes.push(outcome);
    options.onProgress?.({
      done: outcomes.length,
      total: options.episodes,
      failed: outcomes.filter((entry) => !entry.ok).length,
      running,
      rewardMean: rewardMean(outcomes),
      last: outcome,
    });
  };

  const lane = async (): Promise<void> => {
    while (next < options.episodes && stoppedEarly === undefined && !options.signal?.aborted) {
      const index = next;
      next += 1;
      await one(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, options.episodes) }, lane));
  const completed = outcomes.filter((outcome) => outcome.ok);
  return {
    requested: options.episodes,
    completed: completed.length,
    failed: outcomes.length - completed.length,
    rewardMean: rewardMean(outcomes),
    successRate: completed.length === 0 ? 0 : completed.filter((outcome) => outcome.isSuccess).length / completed.length,
    ...(stoppedEarly === undefined ? {} : { stoppedEarly }),
    ...(engineFailed === undefined ? {} : { engineFailed }),
    outcomes: outcomes.sort((a, b) => a.index - b.index),
  };
}

function rewardMean(outcomes: readonly EpisodeOutcome[]): number {
  const rewards = outcomes.filter((outcome) => outcome.ok).map((outcome) => outcome.reward ?? 0);
  return rewards.length === 0 ? 0 : rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length;
}

async function serverNumRepeat(client: SwarmClient): Promise<number> {
  const information = await client.poolInformation();
  const value = information.task_expected_num_repeat;
  return typeof value === "number" && value > 0 ? value : 1;
}

/** The OpenAI SDK loads only when episodes are played: a status poll through this package must not pay for it. */
async function openAiClass(): Promise<typeof OpenAI> {
  return (await import("openai")).default;
}
