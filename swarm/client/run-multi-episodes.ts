import type OpenAI from "openai";
import { runMultiEpisode, type RoleClients } from "./multi-model.ts";
import { SwarmEngineFailedError, SwarmFinishedError, type SwarmClient } from "./swarm-client.ts";

/**
 * A task with several policies, one swarm server each (the paper's non-shared-parameter
 * setting: proposal–review, Werewolves). `a3r swarm client <task> --url role=URL ...`
 * imports one (a module that default-exports it, with `roles`).
 */
export interface MultiRoleTask<Role extends string = string, T extends { taskId: string } = { taskId: string; [key: string]: unknown }> {
  name: string;
  /** The roles, one server each; `--url` names each of them. */
  roles: readonly Role[];
  sampleTask(seed: number): T;
  /** Plays one episode with one OpenAI client per role (its server, its episode key); each role's outcome. */
  runEpisode(
    openai: Readonly<Record<Role, OpenAI>>,
    task: T,
  ): Promise<Readonly<Record<Role, { reward: number; isSuccess: boolean; logMetrics?: Record<string, number> }>>>;
}

export function isMultiRoleTask(value: unknown): value is MultiRoleTask {
  const task = value as Partial<MultiRoleTask> | undefined;
  return (
    typeof task === "object" &&
    task !== null &&
    Array.isArray(task.roles) &&
    task.roles.length > 0 &&
    typeof task.sampleTask === "function" &&
    typeof task.runEpisode === "function"
  );
}

export interface MultiEpisodeRecord<Role extends string> {
  index: number;
  taskId: string;
  ok: boolean;
  rewards?: Record<Role, number>;
  error?: string;
}

export interface MultiRunOptions<Role extends string, T extends { taskId: string }> {
  clients: RoleClients<Role>;
  task: MultiRoleTask<Role, T>;
  episodes: number;
  concurrency?: number;
  /** Seed of the first task; the episodes i·N … i·N+N-1 share one task (a GRPO group on every server). */
  seed?: number;
  /** Episodes per task in a row (default: the largest num_repeat of the servers). */
  numRepeat?: number;
  episodeType?: "train" | "eval";
  discardEpisodeTimeout?: number;
  onEpisode?: (done: number, record: MultiEpisodeRecord<Role>) => void;
  signal?: AbortSignal;
}

export interface MultiRunSummary<Role extends string> {
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

/**
 * Runs `episodes` multi-model episodes, `concurrency` at a time, each through
 * runMultiEpisode: one claim per server under one task id, each role's calls through its
 * own server with its own key, one end per server with that role's outcome; an episode
 * that fails is aborted on every server and the run goes on. The run stops early when any
 * server has finished training or its engine failed (no episode can be played without all).
 */
export async function runMultiEpisodes<Role extends string, T extends { taskId: string }>(options: MultiRunOptions<Role, T>): Promise<MultiRunSummary<Role>> {
  const { task, clients } = options;
  const roles = task.roles;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const numRepeat = Math.max(1, options.numRepeat ?? (await largestNumRepeat(roles.map((role) => clients[role]))));
  const seed = options.seed ?? Math.floor(Math.random() * 1_000_000_000);
  const OpenAIClass = (await import("openai")).default;
  const sums = Object.fromEntries(roles.map((role) => [role, 0])) as Record<Role, number>;
  const failures: string[] = [];
  let next = 0,
    completed = 0,
    failed = 0;
  let stoppedEarly: string | undefined;
  let engineFailed: string | undefined;

  const one = async (index: number): Promise<void> => {
    const sampled = task.sampleTask(seed + Math.floor(index / numRepeat));
    let record: MultiEpisodeRecord<Role>;
    try {
      const outcomes = await runMultiEpisode(
        clients,
        sampled.taskId,
        (handles) => {
          const openai = Object.fromEntries(
            roles.map((role) => [role, new OpenAIClass({ baseURL: handles[role].baseUrl, apiKey: handles[role].apiKey, maxRetries: 1 })]),
          ) as Record<Role, OpenAI>;
          return task.runEpisode(openai, sampled);
        },
        {
          type: options.episodeType ?? "train",
          discardEpisodeTimeout: options.discardEpisodeTimeout ?? 600,
          ...(options.signal ? { signal: options.signal } : {}),
        },
      );
      completed += 1;
      for (const role of roles) sums[role] += outcomes[role].reward;
      record = {
        index,
        taskId: sampled.taskId,
        ok: true,
        rewards: Object.fromEntries(roles.map((role) => [role, outcomes[role].reward])) as Record<Role, number>,
      };
    } catch (error) {
      if (error instanceof SwarmFinishedError || error instanceof SwarmEngineFailedError || options.signal?.aborted) {
        stoppedEarly ??= options.signal?.aborted ? "aborted" : error instanceof Error ? error.message : String(error);
        if (error instanceof SwarmEngineFailedError) engineFailed ??= error.detail;
        return;
      }
      failed += 1;
      const message = error instanceof Error ? error.message : String(error);
      if (failures.length < 20) failures.push(message);
      record = { index, taskId: sampled.taskId, ok: false, error: message };
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
  return {
    requested: options.episodes,
    completed,
    failed,
    rewardMean: Object.fromEntries(roles.map((role) => [role, completed === 0 ? 0 : sums[role] / completed])) as Record<Role, number>,
    ...(stoppedEarly === undefined ? {} : { stoppedEarly }),
    ...(engineFailed === undefined ? {} : { engineFailed }),
    failures,
  };
}

async function largestNumRepeat(clients: readonly SwarmClient[]): Promise<number> {
  const values = await Promise.all(clients.map(async (client) => (await client.poolInformation()).task_expected_num_repeat));
  return Math.max(1, ...values.map((value) => (typeof value === "number" && value > 0 ? value : 1)));
}
