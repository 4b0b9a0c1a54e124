import type { SampleCollectionMethod } from "../config-schema.ts";

/**
 * The five batching strategies (`swarm_mode_sample_collection_method`), as pure functions
 * of the pool. Each decides whether the pool is ready for an optimizer step and, if so,
 * exactly which episodes form the batch. Everything not selected stays in the pool and is
 * carried to the next step ("leftovers"), except what a strategy explicitly discards.
 *
 * With B = train_batch_size and N = num_repeat:
 * - C1 enough episodes: the first B×N completed episodes, in completion order. Leftovers:
 *   every later episode.
 * - C2 enough tasks: the first B tasks to reach N episodes, each with exactly its first N
 *   episodes. Leftovers: extra episodes of those tasks (they start a new group of the same
 *   task id) and every episode of tasks with fewer than N.
 * - C3 enough non-dummy tasks: like C2 but only groups whose N rewards are not all equal
 *   (GRPO learns nothing from a group without reward spread). Complete dummy groups that
 *   reached N before the batch closed are discarded (and counted), so they cannot block
 *   the pool forever.
 * - C4 all clients agree / C5 any client agrees: ready when every (C4) or any (C5) active
 *   client has called agree_sync_weight since the last step and the pool is not empty; the
 *   batch is the whole pool (no leftovers).
 */

export interface PoolEpisode {
  episodeUuid: string;
  taskId: string;
  reward: number;
  /** Monotonic completion order (ties broken by it, never by wall-clock time). */
  sequence: number;
}

export interface StrategyInput {
  method: SampleCollectionMethod;
  trainBatchSize: number;
  numRepeat: number;
  /** The pool, in any order. */
  episodes: readonly PoolEpisode[];
  activeClients: readonly string[];
  /** Clients that agreed to sync since the last step. */
  agreedClients: readonly string[];
}

/** Field names follow AgentJet's pool information answer. */
export interface PoolProgress {
  sample_collection_method: SampleCollectionMethod;
  completed_episodes: number;
  completed_episode_target: number;
  completed_tasks: number;
  completed_task_target: number;
  completed_non_dummy_tasks: number;
  completed_non_dummy_task_target: number;
  task_expected_num_repeat: number;
  active_clients: number;
  agreed_clients: number;
  /** Progress toward the strategy's own target, 0..1. */
  fraction: number;
}

export interface StrategyDecision {
  ready: boolean;
  /** Episode uuids of the batch (empty unless ready), in completion order. */
  selected: string[];
  /** Episode uuids removed from the pool without training (C3's dummy groups). */
  discarded: string[];
  progress: PoolProgress;
}

interface TaskGroup {
  taskId: string;
  /** The task's first N episodes, in completion order. */
  episodes: PoolEpisode[];
  /** Sequence of the N-th episode: when the group became complete. */
  completedSequence: number;
  dummy: boolean;
}

function inCompletionOrder(episodes: readonly PoolEpisode[]): PoolEpisode[] {
  return [...episodes].sort((a, b) => a.sequence - b.sequence);
}

/** Complete groups (tasks with ≥ N episodes), ordered by when they became complete. */
export function completeGroups(episodes: readonly PoolEpisode[], numRepeat: number): TaskGroup[] {
  const byTask = new Map<string, PoolEpisode[]>();
  for (const episode of inCompletionOrder(episodes)) {
    const list = byTask.get(episode.taskId) ?? [];
    list.push(episode);
    byTask.set(episode.taskId, list);
  }
  const groups: TaskGroup[] = [];
  for (const [taskId, list] of byTask) {
    if (list.length < numRepeat) continue;
    const first = list.slice(0, numRepeat);
    const rewards = first.map((episode) => episode.reward);
    const dummy = rewards.every((reward) => Math.abs(reward - rewards[0]!) < 1e-12);
    groups.push({ taskId, episodes: first, completedSequence: first[first.length - 1]!.sequence, dummy });
  }
  return groups.sort((a, b) => a.completedSequence - b.completedSequence);
}

function progressOf(input: StrategyInput, groups: TaskGroup[]): PoolProgress {
  const agreed = input.agreedClients.filter((client) => input.activeClients.includes(client));
  const target = input.trainBatchSize * input.numRepeat;
  const nonDummy = groups.filter((group) => !group.dummy).length;
  const fractionByMethod: Record<SampleCollectionMethod, number> = {
    rollout_until_finish_enough_episodes: input.episodes.length / target,
    rollout_until_finish_enough_tasks: groups.length / input.trainBatchSize,
    rollout_until_finish_enough_non_dummy_tasks: nonDummy / input.trainBatchSize,
    rollout_until_all_clients_agree_sync_weight: input.activeClients.length === 0 ? 0 : agreed.length / input.activeClients.length,
    rollout_until_any_client_agrees_sync_weight: agreed.length > 0 ? 1 : 0,
  };
  return {
    sample_collection_method: input.method,
    completed_episodes: input.episodes.length,
    completed_episode_target: target,
    completed_tasks: groups.length,
    completed_task_target: input.trainBatchSize,
    completed_non_dummy_tasks: nonDummy,
    completed_non_dummy_task_target: input.trainBatchSize,
    task_expected_num_repeat: input.numRepeat,
    active_clients: input.activeClients.length,
    agreed_clients: agreed.length,
    fraction: Math.min(1, fractionByMethod[input.method]),
  };
}

const notReady = (progress: PoolProgress): StrategyDecision => ({ ready: false, selected: [], discarded: [], progress });

/** C1. */
export function enoughEpisodes(input: StrategyInput, progress: PoolProgress): StrategyDecision {
  const target = input.trainBatchSize * input.numRepeat;
  if (input.episodes.length < target) return notReady(progress);
  const selected = inCompletionOrder(input.episodes).slice(0, target).map((episode) => episode.episodeUuid);
  return { ready: true, selected, discarded: [], progress };
}

/** C2 and C3. */
export function enoughTasks(input: StrategyInput, progress: PoolProgress, groups: TaskGroup[], nonDummyOnly: boolean): StrategyDecision {
  const eligible = nonDummyOnly ? groups.filter((group) => !group.dummy) : groups;
  if (eligible.length < input.trainBatchSize) return notReady(progress);
  const chosen = eligible.slice(0, input.trainBatchSize);
  const closedAt = chosen[chosen.length - 1]!.completedSequence;
  const selected = chosen.flatMap((group) => group.episodes).sort((a, b) => a.sequence - b.sequence).map((episode) => episode.episodeUuid);
  const discarded = nonDummyOnly
    ? groups.filter((group) => group.dummy && group.completedSequence <= closedAt).flatMap((group) => group.episodes.map((episode) => episode.episodeUuid))
    : [];
  return { ready: true, selected, discarded, progress };
}

/** C4 (all) and C5 (any). */
export function clientsAgree(input: StrategyInput, progress: PoolProgress, requireAll: boolean): StrategyDecision {
  if (input.episodes.length === 0 || input.activeClients.length === 0) return notReady(progress);
  const agreed = input.activeClients.filter((client) => input.agreedClients.includes(client));
  const ready = requireAll ? agreed.length === input.activeClients.length : agreed.length > 0;
  if (!ready) return notReady(progress);
  return { ready: true, selected: inCompletionOrder(input.episodes).map((episode) => episode.episodeUuid), discarded: [], progress };
}

export function decideBatch(input: StrategyInput): StrategyDecision {
  const groups = completeGroups(input.episodes, input.numRepeat);
  const progress = progressOf(input, groups);
  switch (input.method) {
    case "rollout_until_finish_enough_episodes":
      return enoughEpisodes(input, progress);
    case "rollout_until_finish_enough_tasks":
      return enoughTasks(input, progress, groups, false);
    case "rollout_until_finish_enough_non_dummy_tasks":
      return enoughTasks(input, progress, groups, true);
    case "rollout_until_all_clients_agree_sync_weight":
      return clientsAgree(input, progress, true);
    case "rollout_until_any_client_agrees_sync_weight":
      return clientsAgree(input, progress, false);
  }
}
