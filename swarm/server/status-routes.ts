import { engineStates } from "./engine-state.ts";
import { agentJetStatus, type IdNames, pseudonyms, showIds } from "./episode-names.ts";
import { sendJson, sendText } from "./wire/http-tools.ts";
import type { RouteGroupContext } from "./route-types.ts";
import { renderPrometheus } from "./step-metrics.ts";
import type { TrainingCoordinator } from "./training-coordinator.ts";

/** What anyone may read (PROTOCOL.md §2): health, the engine's state, the pool, the metrics. */
export function addStatusRoutes({ add, coordinator }: RouteGroupContext): void {
  // AgentJet's health answer is {status: "ok"}; `ok` stays for a3r's own callers.
  add("GET /health", "open", (_request, response) => sendJson(response, 200, { status: "ok", ok: true }));
  add("GET /get_engine_status", "open", (_request, response) => sendJson(response, 200, engineStatus(coordinator)));

  let bootingStartedAt: number | undefined;
  coordinator.state.onTransition((record) => {
    if (record.to === "ENGINE.BOOTING") bootingStartedAt = record.at;
  });
  add("GET /get_current_batch_rollout_pool_information", "open", (_request, response, context) =>
    sendJson(
      response,
      200,
      poolInformation(coordinator, () => bootingStartedAt, context.privileged ? showIds : pseudonyms),
    ),
  );
  add("GET /metrics", "open", (_request, response) => sendJson(response, 200, coordinator.metrics));
  add("GET /metrics/prometheus", "open", (_request, response) =>
    sendText(
      response,
      200,
      renderPrometheus({
        state: coordinator.state.state,
        states: engineStates,
        globalStep: coordinator.globalStep,
        runningEpisodes: coordinator.registry.runningCount,
        poolEpisodes: coordinator.pool.size,
        counters: { ...episodeCounters(coordinator) },
        last: coordinator.metrics[coordinator.metrics.length - 1],
      }),
      "text/plain; version=0.0.4",
    ),
  );
}

function engineStatus(coordinator: TrainingCoordinator): object {
  return {
    engine_status: coordinator.state.state,
    engine_status_detail: coordinator.state.detail,
    global_step: coordinator.globalStep,
    max_steps: coordinator.config.max_steps,
    // Set when a boot or training step failed: the engine will not roll again by itself.
    engine_failure: coordinator.failure ?? null,
  };
}

function episodeCounters(coordinator: TrainingCoordinator): Record<string, number> {
  const counters = coordinator.registry.counters;
  return {
    episodes_claimed: counters.claimed,
    episodes_ended: counters.ended,
    episodes_aborted: counters.aborted,
    episodes_reclaimed: counters.reclaimed,
    episodes_closed: counters.closed,
    episodes_dropped_from_history: counters.droppedFromHistory,
    pool_episodes_dropped: coordinator.pool.dropped,
    pool_episodes_discarded: coordinator.pool.discarded,
    episodes_ended_without_reward: coordinator.endedWithoutReward,
    episodes_drain_aborted: coordinator.drainAbortedTotal,
  };
}

/** AgentJet's CurrentBatchRolloutPoolInformation (running_episode_details values are strings there) plus a3r fields. */
function poolInformation(coordinator: TrainingCoordinator, bootingStartedAt: () => number | undefined, names: IdNames): object {
  const now = Date.now();
  const { progress } = coordinator.decision();
  const running: Record<string, Record<string, string>> = {};
  for (const episode of coordinator.registry.runningEpisodes()) {
    // AgentJet's field names and formats ("12.3s"); its task-ratio throttle reads optional_task_id.
    running[names.episode(episode.episodeUuid)] = {
      episode_status: agentJetStatus(episode),
      time_since_last_activity: `${((now - episode.lastActivityAt) / 1000).toFixed(1)}s`,
      discard_episode_timeout: `${(episode.discardTimeoutMs / 1000).toFixed(1)}s`,
      client_uuid: names.client(episode.clientUuid),
      episode_type: episode.type,
      llm_call_count: String(episode.calls.length),
      optional_task_id: episode.taskId ?? "",
    };
  }
  const details = coordinator.pool.taskDetails();
  const booting = bootingStartedAt();
  const quotas = coordinator.clientTaskQuotas();
  return {
    ...progress,
    completed_tasks_details: Object.fromEntries(Object.entries(details.episodes).map(([task, episodes]) => [task, episodes.map(names.episode)])),
    completed_tasks_client_uuids: Object.fromEntries(Object.entries(details.clients).map(([task, clients]) => [task, clients.map(names.client)])),
    // AgentJet's spelling (its model and monitor read it; no a3r client read the old `completed_task_rewards`).
    completed_tasks_rewards: details.rewards,
    engine_status: coordinator.state.state,
    engine_status_detail: coordinator.state.detail,
    global_step: coordinator.globalStep,
    booting_start_time: booting === undefined ? null : booting / 1000,
    running_episodes: coordinator.registry.runningCount,
    max_env_worker: coordinator.config.max_env_worker,
    max_claims_per_client: coordinator.config.max_claims_per_client ?? coordinator.config.max_env_worker,
    unkeyed_claimers: coordinator.registry.unkeyedClaimers,
    max_discard_episode_timeout: coordinator.config.max_discard_episode_timeout,
    drain_timeout: coordinator.config.drain_timeout,
    last_batch_tasks_per_client: Object.fromEntries([...coordinator.lastBatchTasksPerClient].map(([client, count]) => [names.client(client), count])),
    client_task_quotas: quotas ? Object.fromEntries([...quotas].map(([client, quota]) => [names.client(client), quota])) : {},
    engine_failure: coordinator.failure ?? null,
    // AgentJet sends null when nothing runs; its throttle branches on it.
    running_episode_details: Object.keys(running).length === 0 ? null : running,
    counters: episodeCounters(coordinator),
    recent_rewards: coordinator.metrics.slice(-40).map((metrics) => metrics.reward_mean),
  };
}
