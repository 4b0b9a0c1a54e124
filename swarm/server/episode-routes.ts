import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { agentJetStatus, type IdNames, showIds } from "./episode-names.ts";
import type { Episode } from "./episode-registry.ts";
import { HttpError, bearerToken, sendJson } from "./wire/http-tools.ts";
import { abortEpisodeSchema, claimEpisodeSchema, clientRefSchema, endEpisodeSchema, episodeBufferSchema, episodeRefSchema } from "./protocol-schemas.ts";
import { loopbackPeerUid, ownUid } from "./peer-user.ts";
import type { RouteContext, RouteGroupContext } from "./route-types.ts";
import type { TrainingCoordinator } from "./training-coordinator.ts";

/** An episode's life as a client sees it (PROTOCOL.md §3): claim, end or abort, and the episode buffer. */
export function addEpisodeRoutes(group: RouteGroupContext, security: { adminToken: string | undefined }): void {
  const { add, body, coordinator } = group;
  // Claims are counted per TCP connection as well as per client_uuid (PROTOCOL.md §2).
  const connectionIds = new WeakMap<Socket, number>();
  let nextConnectionId = 0;
  const connectionOf = (request: IncomingMessage): number => {
    let id = connectionIds.get(request.socket);
    if (id === undefined) connectionIds.set(request.socket, (id = nextConnectionId += 1));
    return id;
  };
  add("POST /claim_episode", "open", async (request, response, context) => {
    const claim = await body(request, claimEpisodeSchema, "claim_episode");
    // With a token, a claim must carry it: invented client ids cannot hold max_env_worker.
    if (security.adminToken !== undefined && !context.privileged)
      throw new HttpError(
        401,
        "claim_episode needs the server's admin token on a server that has one: send it as `Authorization: Bearer <token>` or `x-admin-token` (a3r's SDKs read A3R_SWARM_ADMIN_TOKEN)",
      );
    const throttle = claim.throttle_policy;
    const result = coordinator.claim({
      clientUuid: claim.client_uuid,
      type: claim.episode_type,
      discardTimeoutSeconds: claim.discard_episode_timeout ?? undefined,
      throttle: throttle ? { ratio: throttle.ratio, currentTaskId: throttle.current_task_id || undefined } : undefined,
      connectionId: connectionOf(request),
      unkeyed: !context.privileged,
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
      // Deterministic mode: the episode's number in the run and the seed its task is drawn from.
      ...(result.slot ? { episode_index: result.slot.index, task_seed: result.slot.taskSeed } : {}),
      // A fixed-protocol evaluation is running: whatever was asked, this is an eval episode of it.
      ...(result.evaluating === undefined ? {} : { episode_type: "eval", protocol_eval_step: result.evaluating }),
      ...(result.clampedFrom === undefined
        ? {}
        : {
            warning: `discard_episode_timeout ${result.clampedFrom} s clamped to the server's max_discard_episode_timeout (${result.discardTimeoutSeconds} s)`,
          }),
    });
  });
  const checkKey = (request: IncomingMessage, episodeUuid: string, endpoint: string, context: RouteContext) =>
    checkEpisodeKey(coordinator, security.adminToken, { request, episodeUuid, endpoint, context });
  add("POST /end_episode", "open", async (request, response, context) => {
    const end = await body(request, endEpisodeSchema, "end_episode");
    checkKey(request, end.episode_uuid, "end_episode", context);
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
    checkKey(request, abort.episode_uuid, "abort_episode", context);
    coordinator.abort(abort.client_uuid, abort.episode_uuid);
    sendJson(response, 200, { success: true });
  });
  add("POST /can_continue_episode", "open", async (request, response) => {
    const reference = await body(request, episodeRefSchema, "can_continue_episode");
    sendJson(response, 200, { can_continue: coordinator.canContinue(reference.client_uuid, reference.episode_uuid) });
  });
  add("POST /get_episode_buffer", "open", async (request, response, context) => {
    await body(request, episodeBufferSchema, "get_episode_buffer");
    sendJson(response, 200, episodeBuffer(coordinator, bearerToken(request), context.privileged));
  });
  add("POST /agree_sync_weight", "open", async (request, response) => {
    const { client_uuid } = await body(request, clientRefSchema, "agree_sync_weight");
    const { triggered } = coordinator.agreeSyncWeight(client_uuid);
    // global_step and the state let a client that does not poll for ROLLING_POST tell
    // whether its agreement started the step (it did when triggered is true).
    sendJson(response, 200, { success: true, triggered, global_step: coordinator.globalStep, engine_status: coordinator.state.state });
  });
}

/**
 * An end or abort must carry the episode's own key (PROTOCOL.md §7). The one exception is
 * AgentJet's client, which never sends it: on a token-less loopback server (and unless
 * require_episode_key is true) a keyless end is accepted from the server's own OS user,
 * which the kernel's socket table names, and from no other local user.
 */
function checkEpisodeKey(
  coordinator: TrainingCoordinator,
  adminToken: string | undefined,
  { request, episodeUuid, endpoint, context }: { request: IncomingMessage; episodeUuid: string; endpoint: string; context: RouteContext },
): void {
  // The admin may end or abort any episode (cleanup, tests); its token is not an episode key.
  if (context.privileged) return;
  const key = bearerToken(request);
  if (key === undefined) {
    if (requireEpisodeKey({ ...coordinator.config, admin_token: adminToken ?? coordinator.config.admin_token }))
      throw new HttpError(401, `${endpoint} needs the episode's key: send Authorization: Bearer <openai_api_key of the claim> (require_episode_key is on)`);
    const uid = ownUid();
    if (uid === undefined || loopbackPeerUid(request.socket) !== uid)
      throw new HttpError(
        401,
        `${endpoint} needs the episode's key: send Authorization: Bearer <openai_api_key of the claim> (a keyless ${endpoint} is accepted only from the OS user running this server)`,
      );
    return;
  }
  const episode = coordinator.registry.running(episodeUuid);
  if (episode !== undefined && !sameSecret(key, episode.apiKey)) throw new HttpError(403, `${endpoint}: that key does not belong to this episode`);
}

/**
 * get_episode_buffer: the admin sees every episode; a caller presenting one of its episode
 * keys (running or recently finished) its own client's; anyone else none. Naming a
 * client_uuid proves nothing: it once let any local user read a victim's episode ids.
 */
function episodeBuffer(coordinator: TrainingCoordinator, key: string | undefined, privileged: boolean): object {
  const now = Date.now();
  const owner = privileged || key === undefined ? undefined : coordinator.registry.ownerOfKey(key);
  if (!privileged && owner === undefined)
    return {
      buffer: [],
      detail: "get_episode_buffer answers about the caller's own episodes: send Authorization: Bearer <openai_api_key of one of them> (or the admin token)",
    };
  const names: IdNames = privileged ? showIds : { episode: (uuid) => uuid, client: (uuid) => uuid };
  const mine = (episode: Episode) => privileged || episode.clientUuid === owner;
  const recent = coordinator.registry.historyEpisodes().filter(mine).slice(-200);
  const running = coordinator.registry.runningEpisodes().filter(mine);
  return { buffer: [...running, ...recent].map((episode) => episodeView(episode, now, names)) };
}

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
