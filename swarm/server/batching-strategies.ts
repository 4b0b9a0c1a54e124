import type { SampleCollectionMethod } from "../config/config-schema.ts";

/**
 * The five batching strategies (`swarm_mode_sample_collection_method`), as pure functions
 * of the pool. Each decides whether the pool is ready for an optimizer step and, if so,
 * exactly which episodes form the batch. Everything not selected stays in the pool and is
 * carried to the next step ("leftovers"), except what a strategy explicitly discards.
 *
 * With B = train_batch_size and N = num_repeat:
 * - C1 enough episodes: the first B×N completed episodes, in completion order. Leftovers:
 *   every later episode.
 * - C2 enough tasks: a task's episodes form groups of N in completion order; the first B
 *   tasks to complete a group, each with exactly its earliest group. Leftovers: later
 *   episodes of those tasks (they form the task's next group) and every episode of tasks
 *   with fewer than N.
 * - C3 enough non-dummy tasks: like C2 but only groups whose N rewards are not all equal
 *   (GRPO learns nothing from a group without reward spread). Dummy groups are discarded
 *   (and counted) as soon as they are complete, so they never block a task id.
 * - C4 all clients agree / C5 any client agrees: ready when every (C4) or any (C5) active
 *   client has called agree_sync_weight since the last step and the pool is not empty; the
 *   batch is the whole pool (no leftovers).
 *
 * Per-client task ratios ("cocktail" training, C2 and C3): with `clientTaskQuotas`, a client
 * named there contributes at most its quota of the B tasks; its groups past the quota wait
 * in the pool for a later step, and the batch is ready only once B groups fit the quotas.
 * Clients without a quota fill whatever the quotas leave.
 */

export interface PoolEpisode {
  episodeUuid: string;
  taskId: string;
  reward: number;
  /** Monotonic completion order (ties broken by it, never by wall-clock time). */
  sequence: number;
  /** Who ran it (per-client task quotas read it). */
  clientUuid?: string;
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
  /** Tasks per batch each named client may contribute (C2, C3); see the module comment. */
  clientTaskQuotas?: ReadonlyMap<string, number>;
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
  /** N consecutive episodes of one task, in completion order. */
  episodes: PoolEpisode[];
  /** Sequence of the group's last episode: when the group became complete. */
  completedSequence: number;
  dummy: boolean;
  /** 0 for the task's earliest group, 1 for the next N episodes, ... */
  position: number;
}

function inCompletionOrder(episodes: readonly PoolEpisode[]): PoolEpisode[] {
  return [...episodes].sort((a, b) => a.sequence - b.sequence);
}

/**
 * Each task's episodes cut, in completion order, into consecutive groups of N (a partial
 * last group is not a group yet); all groups ordered by when they became complete.
 */
export function completeGroups(episodes: readonly PoolEpisode[], numRepeat: number): TaskGroup[] {
  const byTask = new Map<string, PoolEpisode[]>();
  for (const episode of inCompletionOrder(episodes)) {
    const list = byTask.get(episode.taskId) ?? [];
    list.push(episode);
    byTask.set(episode.taskId, list);
  }
  const groups: TaskGroup[] = [];
  for (const [taskId, list] of byTask) {
    for (let start = 0, position = 0; start + numRepeat <= list.length; start += numRepeat, position += 1) {
      const members = list.slice(start, start + numRepeat);
      const rewards = members.map((episode) => episode.reward);
      const dummy = rewards.every((reward) => Math.abs(reward - rewards[0]!) < 1e-12);
      groups.push({ taskId, episodes: members, completedSequence: members[members.length - 1]!.sequence, dummy, position });
    }
  }
  return groups.sort((a, b) => a.completedSequence - b.completedSequence);
}

function progressOf(input: StrategyInput, groups: TaskGroup[]): PoolProgress {
  const agreed = input.agreedClients.filter((client) => input.activeClients.includes(client));
  const target = input.trainBatchSize * input.numRepeat;
  const completedTasks = new Set(groups.map((group) => group.taskId)).size;
  const nonDummy = new Set(groups.filter((group) => !group.dummy).map((group) => group.taskId)).size;
  const fractionByMethod: Record<SampleCollectionMethod, number> = {
    rollout_until_finish_enough_episodes: input.episodes.length / target,
    rollout_until_finish_enough_tasks: completedTasks / input.trainBatchSize,
    rollout_until_finish_enough_non_dummy_tasks: nonDummy / input.trainBatchSize,
    rollout_until_all_clients_agree_sync_weight: input.activeClients.length === 0 ? 0 : agreed.length / input.activeClients.length,
    rollout_until_any_client_agrees_sync_weight: agreed.length > 0 ? 1 : 0,
  };
  return {
    sample_collection_method: input.method,
    completed_episodes: input.episodes.length,
    completed_episode_target: target,
    completed_tasks: completedTasks,
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
  const selected = inCompletionOrder(input.episodes)
    .slice(0, target)
    .map((episode) => episode.episodeUuid);
  return { ready: true, selected, discarded: [], progress };
}

/** C2 and C3: the first B tasks to complete an (eligible) group, one group each. */
export function enoughTasks(input: StrategyInput, progress: PoolProgress, groups: TaskGroup[], nonDummyOnly: boolean): StrategyDecision {
  // C3 drops dummy groups as soon as they are complete: their membership is fixed, so they
  // can never become useful, and kept they would hide the task's later episodes.
  const discarded = nonDummyOnly ? groups.filter((group) => group.dummy).flatMap((group) => group.episodes.map((episode) => episode.episodeUuid)) : [];
  const chosen: TaskGroup[] = [];
  const seen = new Set<string>();
  const perClient = new Map<string, number>();
  for (const group of groups) {
    if (seen.has(group.taskId) || (nonDummyOnly && group.dummy)) continue;
    // C2 takes a task's earliest group only; its later episodes are leftovers.
    if (!nonDummyOnly && group.position > 0) continue;
    const client = group.episodes[0]!.clientUuid;
    const quota = client === undefined ? undefined : input.clientTaskQuotas?.get(client);
    if (quota !== undefined) {
      const used = perClient.get(client!) ?? 0;
      if (used >= quota) continue;
      perClient.set(client!, used + 1);
    }
    seen.add(group.taskId);
    chosen.push(group);
    if (chosen.length >= input.trainBatchSize) break;
  }
  if (chosen.length < input.trainBatchSize) return { ready: false, selected: [], discarded, progress };
  const selected = chosen
    .slice(0, input.trainBatchSize)
    .flatMap((group) => group.episodes)
    .sort((a, b) => a.sequence - b.sequence)
    .map((episode) => episode.episodeUuid);
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
