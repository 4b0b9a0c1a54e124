import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { parse as parseYaml } from "yaml";
import { parseSwarmConfig, SwarmConfigError } from "../config.ts";
import { AgentJetConfigError, applyAgentJetConfig, isAgentJetConfig } from "./agentjet-config.ts";
import { addAgentJetRoutes } from "./agentjet-routes.ts";
import type { AddRoute, ReadBody, Route, RouteContext } from "./route-types.ts";
import { engineStates } from "./engine-state.ts";
import type { Episode } from "./episode-registry.ts";
import type { Gateway } from "./gateway.ts";
import { HttpError, bearerToken, parseBody, readBody, sendJson, sendText } from "./http-tools.ts";
import {
  abortEpisodeSchema,
  claimEpisodeSchema,
  clientRefSchema,
  episodeBufferSchema,
  endEpisodeSchema,
  episodeRefSchema,
  resumeSchema,
  syncTrainConfigSchema,
} from "./protocol-schemas.ts";
import { renderPrometheus } from "./step-metrics.ts";
import type { SwarmLogger } from "./logger.ts";
import { RequestRefused, type TrainingCoordinator } from "./training-coordinator.ts";

export type { AddRoute, ReadBody, Route, RouteContext, RouteKind } from "./route-types.ts";

/** Every endpoint of swarm/PROTOCOL.md §2, keyed by "METHOD /path". */
export function protocolRoutes(
  coordinator: TrainingCoordinator,
  gateway: Gateway,
  security: { adminToken: string | undefined },
  setup: { experimentRoot: string; logger: SwarmLogger },
): Map<string, Route> {
  const body: ReadBody = async (request, schema, endpoint) =>
    parseBody(await readBody(request, coordinator.config.limits.max_request_body_bytes), schema, endpoint);
  const routes = new Map<string, Route>();
  const add: AddRoute = (key, kind, handle) => {
    routes.set(key, { kind, handle });
  };

  // AgentJet's health answer is {status: "ok"}; `ok` stays for a3r's own callers.
  add("GET /health", "open", (_request, response) => sendJson(response, 200, { status: "ok", ok: true }));
  add("GET /get_engine_status", "open", (_request, response) => sendJson(response, 200, engineStatus(coordinator)));

  add("POST /sync_train_config", "control", async (request, response) => {
    const { yaml_as_string } = await body(request, syncTrainConfigSchema, "sync_train_config");
    coordinator.checkReconfigurable();
    let lenient: unknown;
    try {
      lenient = parseYaml(yaml_as_string, { maxAliasCount: 100 });
    } catch {
      lenient = undefined; // the strict parser below reports the syntax error with its line
    }
    if (isAgentJetConfig(lenient)) {
      // AgentJet's own YAML: map what a3r understands, say what it ignored (answer and log).
      let mapping: ReturnType<typeof applyAgentJetConfig>;
      try {
        mapping = applyAgentJetConfig(lenient, coordinator.config, setup.experimentRoot);
      } catch (error) {
        if (error instanceof AgentJetConfigError) throw new HttpError(400, `yaml_as_string (AgentJet form): ${error.message}`);
        throw error;
      }
      coordinator.replaceConfig(mapping.config);
      setup.logger.info(
        { mapped: mapping.mapped, ignored: mapping.ignored, ignoredNotListed: mapping.ignoredNotListed, experimentDir: mapping.config.experiment_dir },
        "sync_train_config: AgentJet configuration applied; the ignored keys take no effect here",
      );
      sendJson(response, 200, {
        success: true,
        config_form: "agentjet",
        mapped_keys: mapping.mapped,
        ignored_keys: mapping.ignored,
        ignored_keys_not_listed: mapping.ignoredNotListed,
        experiment_dir: mapping.config.experiment_dir,
      });
      return;
    }
    try {
      const next = parseSwarmConfig(yaml_as_string, { file: "yaml_as_string" });
      const current = coordinator.config;
      coordinator.replaceConfig({ ...next, port: current.port, host: current.host, admin_token: current.admin_token });
    } catch (error) {
      if (error instanceof SwarmConfigError) throw new HttpError(400, `${error.where}: ${error.message}${error.hint ? ` (${error.hint})` : ""}`);
      throw error;
    }
    sendJson(response, 200, { success: true, config_form: "a3r", experiment_dir: coordinator.config.experiment_dir });
  });
  add("POST /start_engine", "control", (_request, response) => {
    coordinator.start();
    sendJson(response, 200, { success: true, pid: process.pid });
  });
  add("POST /stop_engine", "control", async (_request, response) => {
    await coordinator.stop("stop_engine called");
    sendJson(response, 200, { success: true });
  });
  add("POST /save_checkpoint", "control", async (_request, response) => {
    if (coordinator.state.state === "ENGINE.WEIGHT_SYNCING")
      throw new RequestRefused(409, "the weights are changing (ENGINE.WEIGHT_SYNCING); retry when the step is done");
    const path = await coordinator.saveCheckpoint();
    sendJson(response, 200, { success: true, path, global_step: coordinator.globalStep });
  });
  add("POST /resume_from_checkpoint", "control", async (request, response) => {
    const { path } = await body(request, resumeSchema, "resume_from_checkpoint");
    await coordinator.resume(path ?? undefined);
    sendJson(response, 200, { success: true, global_step: coordinator.globalStep });
  });

  add("POST /claim_episode", "open", async (request, response) => {
    const claim = await body(request, claimEpisodeSchema, "claim_episode");
    const throttle = claim.throttle_policy;
    const result = coordinator.claim({
      clientUuid: claim.client_uuid,
      type: claim.episode_type,
      discardTimeoutSeconds: claim.discard_episode_timeout ?? undefined,
      throttle: throttle ? { ratio: throttle.ratio, currentTaskId: throttle.current_task_id || undefined } : undefined,
    });
    const base = { client_uuid: claim.client_uuid };
    if (!result.ok) {
      const refusal = { ...base, success: false, episode_uuid: "", openai_base_url: "", openai_api_key: "", fail_cause: result.failCause };
      if (result.status !== undefined) {
        sendJson(response, result.status, { ...refusal, detail: result.failCause, error: result.failCause }, { "retry-after": "1" });
        return;
      }
      sendJson(response, 200, refusal);
      return;
    }
    sendJson(response, 200, {
      ...base,
      success: true,
      episode_uuid: result.episode.episodeUuid,
      openai_base_url: `http://${request.headers.host ?? `${coordinator.config.host}:${coordinator.config.port}`}/v1`,
      openai_api_key: result.episode.apiKey,
      fail_cause: "",
      // The idle timeout in force, which is less than asked when the server's cap clamped it.
      discard_episode_timeout: result.discardTimeoutSeconds,
      ...(result.clampedFrom === undefined
        ? {}
        : {
            warning: `discard_episode_timeout ${result.clampedFrom} s clamped to the server's max_discard_episode_timeout (${result.discardTimeoutSeconds} s)`,
          }),
    });
  });
  // Episode uuids are capabilities: an end or abort that carries a key must carry that
  // episode's key, and with require_episode_key one without a key is refused.
  const checkEpisodeKey = (request: IncomingMessage, episodeUuid: string, endpoint: string, context: RouteContext): void => {
    // The admin may end or abort any episode (cleanup, tests); its token is not an episode key.
    if (context.privileged) return;
    const key = bearerToken(request);
    const episode = coordinator.registry.running(episodeUuid);
    if (key === undefined) {
      if (requireEpisodeKey({ ...coordinator.config, admin_token: security.adminToken ?? coordinator.config.admin_token }))
        throw new HttpError(401, `${endpoint} needs the episode's key: send Authorization: Bearer <openai_api_key of the claim> (require_episode_key is on)`);
      return;
    }
    if (episode !== undefined && !sameSecret(key, episode.apiKey)) throw new HttpError(403, `${endpoint}: that key does not belong to this episode`);
  };
  add("POST /end_episode", "open", async (request, response, context) => {
    const end = await body(request, endEpisodeSchema, "end_episode");
    checkEpisodeKey(request, end.episode_uuid, "end_episode", context);
    const metadataTaskId = end.workflow_output.metadata?.task_id;
    if (metadataTaskId !== undefined && metadataTaskId !== end.task_id) {
      throw new HttpError(
        400,
        `end_episode: workflow_output.metadata.task_id ("${metadataTaskId}") differs from task_id ("${end.task_id}"); send the same task id in both`,
      );
    }
    coordinator.end({
      clientUuid: end.client_uuid,
      episodeUuid: end.episode_uuid,
      taskId: end.task_id,
      reward: end.workflow_output.reward ?? null,
      isSuccess: end.workflow_output.is_success ?? undefined,
      logMetrics: end.workflow_output.log_metrics ?? {},
    });
    sendJson(response, 200, { success: true });
  });
  add("POST /abort_episode", "open", async (request, response, context) => {
    const abort = await body(request, abortEpisodeSchema, "abort_episode");
    checkEpisodeKey(request, abort.episode_uuid, "abort_episode", context);
    coordinator.abort(abort.client_uuid, abort.episode_uuid);
    sendJson(response, 200, { success: true });
  });
  add("POST /can_continue_episode", "open", async (request, response) => {
    const reference = await body(request, episodeRefSchema, "can_continue_episode");
    sendJson(response, 200, { can_continue: coordinator.canContinue(reference.client_uuid, reference.episode_uuid) });
  });
  add("POST /get_episode_buffer", "open", async (request, response, context) => {
    const now = Date.now();
    const recent = coordinator.registry.historyEpisodes().slice(-200);
    // A client sees its own episodes (its uuid is known to it alone); the admin sees all.
    const { client_uuid: caller } = await body(request, episodeBufferSchema, "get_episode_buffer");
    const names: IdNames = context.privileged ? showIds : { episode: (uuid) => uuid, client: (uuid) => uuid };
    const view = (episode: Episode) =>
      episodeView(episode, now, context.privileged || (caller !== undefined && episode.clientUuid === caller) ? names : pseudonyms);
    sendJson(response, 200, { buffer: [...coordinator.registry.runningEpisodes(), ...recent].map(view) });
  });
  add("POST /agree_sync_weight", "open", async (request, response) => {
    const { client_uuid } = await body(request, clientRefSchema, "agree_sync_weight");
    coordinator.agreeSyncWeight(client_uuid);
    sendJson(response, 200, { success: true });
  });

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

  addAgentJetRoutes({ add, body, coordinator, logger: setup.logger });
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

  add("POST /v1/chat/completions", "openai", (request, response) => gateway.chatCompletions(request, response));
  add("POST /v1/messages", "openai", (request, response) => gateway.messages(request, response));
  add("POST /v1/messages/count_tokens", "openai", (request, response) => gateway.countTokens(request, response));
  add("POST /v1/responses", "openai", (request, response) => gateway.responses(request, response));
  add("GET /v1/models", "openai", (request, response) => gateway.models(request, response));
  return routes;
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

/**
 * How episode and client uuids appear in what any caller can read. Only a caller with the
 * admin token sees them; everyone else sees stable pseudonyms (a keyed hash, useless for
 * ending someone's episode) with the task ids, counts and ages AgentJet's throttle reads.
 */
interface IdNames {
  episode(uuid: string): string;
  client(uuid: string): string;
}
const showIds: IdNames = { episode: (uuid) => uuid, client: (uuid) => uuid };
const pseudonymKey = randomBytes(32);
const pseudonym = (kind: string, uuid: string): string => `${kind}-${createHmac("sha256", pseudonymKey).update(uuid).digest("hex").slice(0, 12)}`;
const pseudonyms: IdNames = { episode: (uuid) => pseudonym("episode", uuid), client: (uuid) => pseudonym("client", uuid) };

/** require_episode_key as configured, or its default (on with an admin token or a non-loopback bind). */
export function requireEpisodeKey(config: { require_episode_key?: boolean | undefined; admin_token?: string | undefined; host: string }): boolean {
  return config.require_episode_key ?? (config.admin_token !== undefined || !isLoopbackHost(config.host));
}

export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** AgentJet calls a claimed, unfinished episode "claimed"; a3r's own `status` field keeps "running". */
function agentJetStatus(episode: Episode): string {
  return episode.status === "running" ? "claimed" : episode.status;
}

/** One entry of get_episode_buffer, with AgentJet's EpisodeStatus field names (keys never included). */
function episodeView(episode: Episode, now: number, names: IdNames): object {
  return {
    episode_uuid: names.episode(episode.episodeUuid),
    episode_status: agentJetStatus(episode),
    episode_type: episode.type,
    openai_base_url: "",
    openai_api_key: "",
    client_uuid: names.client(episode.clientUuid),
    latest_activity_timestamp: episode.lastActivityAt / 1000,
    discard_episode_timeout: episode.discardTimeoutMs / 1000,
    llm_call_count: episode.calls.length,
    optional_task_id: episode.taskId ?? "",
    // a3r additions
    status: episode.status,
    claimed_at: episode.claimedAt / 1000,
    idle_seconds: episode.status === "running" ? (now - episode.lastActivityAt) / 1000 : 0,
    claim_step: episode.claimStep,
    ...(episode.reward === undefined ? {} : { reward: episode.reward }),
    ...(episode.closeReason === undefined ? {} : { close_reason: episode.closeReason }),
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
    completed_task_rewards: details.rewards,
    engine_status: coordinator.state.state,
    engine_status_detail: coordinator.state.detail,
    global_step: coordinator.globalStep,
    booting_start_time: booting === undefined ? null : booting / 1000,
    running_episodes: coordinator.registry.runningCount,
    max_env_worker: coordinator.config.max_env_worker,
    max_claims_per_client: coordinator.config.max_claims_per_client ?? coordinator.config.max_env_worker,
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
