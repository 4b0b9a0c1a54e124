import { randomUUID } from "node:crypto";
import { backoffDelay, isConnectionError, sleep } from "./backoff.ts";

/**
 * The TypeScript swarm client: claim episodes, end them with a reward, abort, agree to
 * sync, and drive the engine (config, start, stop, resume). It speaks the same protocol
 * as AgentJet's Python client (swarm/PROTOCOL.md).
 *
 * It survives server restarts: connection errors and 502/503/504 are retried with capped
 * exponential backoff (for `retryForMs`, default two minutes; `beginEpisode` waits as long
 * as it is allowed to). A refusal (4xx) is never retried: it throws SwarmRequestError with
 * the server's reason. `status()` never throws: an unreachable server reads as
 * ENGINE.CANNOT_CONNECT. Not part of it: running the agent (see run-episodes.ts).
 */

export interface SwarmClientOptions {
  /** The server's root URL, e.g. http://127.0.0.1:10086. */
  url: string;
  clientUuid?: string;
  /**
   * Sent on control calls (config, start, stop, checkpoint, resume) and on claims, which a
   * server with a token requires it on. Default: A3R_SWARM_ADMIN_TOKEN, which a worker
   * gives the server and its clients.
   */
  adminToken?: string;
  backoff?: { initialMs: number; maxMs: number };
  /** How long ordinary calls keep retrying an unreachable server. */
  retryForMs?: number;
  /** Per-request timeout. */
  requestTimeoutMs?: number;
}

export interface EpisodeHandle {
  episodeUuid: string;
  /** An OpenAI base URL (ends in /v1) and key valid for this episode only. */
  baseUrl: string;
  apiKey: string;
  /**
   * A deterministic server's choice (swarm.yaml `deterministic: true`): the episode's number
   * in the run and the seed to draw its task from. A client that runs tasks must use it
   * instead of its own stream, or runs with the same seed stop being reproducible.
   */
  slot?: { episodeIndex: number; taskSeed: number };
  /**
   * Set when the server handed this claim an episode of a fixed-protocol evaluation
   * (swarm.yaml `eval_protocol`): the step whose weights it measures. It is played like any
   * other (from `slot`'s task seed) and never trained on.
   */
  evaluating?: number;
}

export interface EngineStatus {
  engine_status: string;
  engine_status_detail: string;
  /** -1 when the server cannot be reached. */
  global_step: number;
  [field: string]: unknown;
}

export interface EndEpisodeOptions {
  /** null: end without a reward (the episode is never trained on; PROTOCOL.md §2). */
  reward: number | null;
  isSuccess?: boolean;
  metadata?: Record<string, unknown>;
  logMetrics?: Record<string, number>;
}

export class SwarmRequestError extends Error {
  constructor(
    readonly status: number,
    readonly endpoint: string,
    message: string,
  ) {
    super(`${endpoint}: ${message} (HTTP ${status})`);
    this.name = "SwarmRequestError";
  }
}

/** The server stopped training for good (max_steps reached): no more episodes to serve. */
export class SwarmFinishedError extends Error {
  constructor(detail: string) {
    super(`training has finished: ${detail}`);
    this.name = "SwarmFinishedError";
  }
}

/**
 * The server's engine failed (boot or training step) and is OFFLINE: it will not roll
 * again unless someone calls start_engine or resume_from_checkpoint, so waiting is futile.
 */
export class SwarmEngineFailedError extends Error {
  constructor(readonly detail: string) {
    super(`the swarm server's engine failed: ${detail}`);
    this.name = "SwarmEngineFailedError";
  }
}

export class SwarmUnreachableError extends Error {
  constructor(url: string, waitedMs: number, cause: unknown) {
    super(`swarm server at ${url} unreachable for ${Math.round(waitedMs / 1000)} s (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.name = "SwarmUnreachableError";
  }
}

/** The longest wait between claim tries against a deterministic server (see `#deterministic`). */
const deterministicPollMs = 100;

export class SwarmClient {
  readonly url: string;
  readonly clientUuid: string;
  readonly #adminToken: string | undefined;
  /** Keys of the episodes this client claimed and has not ended yet. */
  readonly #episodeKeys = new Map<string, string>();
  /** The key of the latest claim: after its end it still names this client to get_episode_buffer. */
  #lastKey: string | undefined;
  /**
   * Set once a claim came back numbered (a deterministic server). Such a server refuses
   * claims at every round's end until its step is trained, so a claim waits at most
   * `deterministicPollMs` between tries: the full backoff would idle every lane for
   * seconds per step, the mode's main cost (swarm/engines/README.md).
   */
  #deterministic = false;
  readonly #backoff: { initialMs: number; maxMs: number };
  readonly #retryForMs: number;
  readonly #requestTimeoutMs: number;

  constructor(options: SwarmClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.clientUuid = options.clientUuid ?? randomUUID();
    this.#adminToken = options.adminToken ?? (process.env.A3R_SWARM_ADMIN_TOKEN || undefined);
    this.#backoff = options.backoff ?? { initialMs: 50, maxMs: 2000 };
    this.#retryForMs = options.retryForMs ?? 120_000;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  }

  /**
   * Claims an episode, waiting (capped backoff) while the engine is not ROLLING, the
   * concurrency cap (global or this client's own, a 429) is reached, or the server is
   * unreachable. Throws SwarmFinishedError when training has finished, SwarmEngineFailedError
   * when the engine failed and is OFFLINE for good, the signal's reason when it aborts.
   */
  async beginEpisode(
    options: {
      type?: "train" | "eval";
      discardEpisodeTimeout?: number;
      signal?: AbortSignal;
      maxWaitMs?: number;
      /** This client's share of each batch and the task it is about to run (per-client task ratios, PROTOCOL.md §3). */
      taskRatio?: { ratio: number; taskId: string };
    } = {},
  ): Promise<EpisodeHandle> {
    const started = Date.now();
    for (let attempt = 0; ; attempt += 1) {
      let cause: unknown;
      try {
        const answer = await this.#once(
          "POST",
          "/claim_episode",
          {
            client_uuid: this.clientUuid,
            episode_type: options.type ?? "train",
            discard_episode_timeout: options.discardEpisodeTimeout ?? 600,
            ...(options.taskRatio ? { throttle_policy: { ratio: options.taskRatio.ratio, current_task_id: options.taskRatio.taskId } } : {}),
          },
          "admin",
        );
        if (answer.success === true) {
          const handle: EpisodeHandle = {
            episodeUuid: String(answer.episode_uuid),
            baseUrl: String(answer.openai_base_url),
            apiKey: String(answer.openai_api_key),
          };
          if (typeof answer.episode_index === "number" && typeof answer.task_seed === "number")
            handle.slot = { episodeIndex: answer.episode_index, taskSeed: answer.task_seed };
          if (typeof answer.protocol_eval_step === "number") handle.evaluating = answer.protocol_eval_step;
          this.#episodeKeys.set(handle.episodeUuid, handle.apiKey);
          this.#lastKey = handle.apiKey;
          if (handle.slot) this.#deterministic = true;
          // Episodes the server reclaimed are never ended here: keep the map bounded.
          if (this.#episodeKeys.size > 10_000) this.#episodeKeys.delete(this.#episodeKeys.keys().next().value!);
          return handle;
        }
        cause = String(answer.fail_cause ?? "claim refused");
        if (/^ENGINE\.OFFLINE: failed: /.test(String(cause))) throw new SwarmEngineFailedError(String(cause).replace(/^ENGINE\.OFFLINE: failed: /, ""));
        if (/^ENGINE\.OFFLINE: finished/.test(String(cause)))
          throw new SwarmFinishedError(
            String(cause)
              .replace(/^ENGINE\.OFFLINE: /, "")
              .split(";")[0]!,
          );
      } catch (error) {
        // 429: this client holds max_claims_per_client episodes; one of its own will end.
        const capped = error instanceof SwarmRequestError && error.status === 429;
        if (!isConnectionError(error) && !capped) throw error;
        cause = error;
      }
      if (options.maxWaitMs !== undefined && Date.now() - started > options.maxWaitMs) {
        throw new Error(`claim_episode: no episode within ${options.maxWaitMs} ms (${cause instanceof Error ? cause.message : String(cause)})`);
      }
      const delay = backoffDelay(attempt, this.#backoff);
      await sleep(this.#deterministic ? Math.min(delay, deterministicPollMs) : delay, options.signal);
    }
  }

  async endEpisode(taskId: string, episodeUuid: string, options: EndEpisodeOptions): Promise<void> {
    await this.#call(
      "POST",
      "/end_episode",
      {
        client_uuid: this.clientUuid,
        episode_uuid: episodeUuid,
        task_id: taskId,
        workflow_output: {
          reward: options.reward,
          ...(options.isSuccess === undefined ? {} : { is_success: options.isSuccess }),
          metadata: { ...options.metadata, task_id: taskId },
          ...(options.logMetrics ? { log_metrics: options.logMetrics } : {}),
        },
      },
      this.#episodeAuth(episodeUuid),
    );
    this.#episodeKeys.delete(episodeUuid);
  }

  async abortEpisode(episodeUuid: string, taskId = ""): Promise<void> {
    await this.#call("POST", "/abort_episode", { client_uuid: this.clientUuid, episode_uuid: episodeUuid, task_id: taskId }, this.#episodeAuth(episodeUuid));
    this.#episodeKeys.delete(episodeUuid);
  }

  /** The episode's own key proves the end or abort comes from its claimant (PROTOCOL.md). */
  #episodeAuth(episodeUuid: string): Auth {
    const key = this.#episodeKeys.get(episodeUuid);
    return key === undefined ? "none" : { episodeKey: key };
  }

  async canContinue(episodeUuid: string): Promise<boolean> {
    const answer = await this.#call("POST", "/can_continue_episode", { client_uuid: this.clientUuid, episode_uuid: episodeUuid });
    return answer.can_continue === true;
  }

  /**
   * Agrees to train now (C4, C5). The server refuses (SwarmRequestError 400, with the
   * reason) when the agreement could not lead to a step: outside ROLLING, before this client
   * ended a rewarded episode, or on an empty pool (PROTOCOL.md §2).
   */
  async agreeSyncWeight(): Promise<void> {
    await this.#call("POST", "/agree_sync_weight", { client_uuid: this.clientUuid });
  }

  async syncTrainConfig(yamlText: string): Promise<void> {
    await this.#call("POST", "/sync_train_config", { yaml_as_string: yamlText }, true);
  }

  async start(): Promise<void> {
    await this.#call("POST", "/start_engine", {}, true);
  }

  async stop(): Promise<void> {
    await this.#call("POST", "/stop_engine", {}, true);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async saveCheckpoint(): Promise<string> {
    const answer = await this.#call("POST", "/save_checkpoint", {}, true);
    return String(answer.path);
  }

  async resumeFromCheckpoint(path?: string): Promise<void> {
    await this.#call("POST", "/resume_from_checkpoint", path ? { path } : {}, true);
  }

  /** Never throws for an unreachable server: reports ENGINE.CANNOT_CONNECT instead. */
  async status(): Promise<EngineStatus> {
    try {
      return (await this.#once("GET", "/get_engine_status")) as EngineStatus;
    } catch (error) {
      if (!isConnectionError(error)) throw error;
      return {
        engine_status: "ENGINE.CANNOT_CONNECT",
        engine_status_detail: error instanceof Error ? `${error.message}${causeText(error)}` : String(error),
        global_step: -1,
      };
    }
  }

  async poolInformation(): Promise<Record<string, unknown>> {
    return this.#call("GET", "/get_current_batch_rollout_pool_information", undefined, true);
  }

  async metrics(): Promise<Array<Record<string, number>>> {
    return (await this.#call("GET", "/metrics")) as unknown as Array<Record<string, number>>;
  }

  /** This client's episodes (the server knows the caller by one of its open episode keys), or all of them with the admin token. */
  async episodeBuffer(): Promise<Array<Record<string, unknown>>> {
    const key = this.#lastKey;
    const auth: Auth = this.#adminToken || key === undefined ? "admin" : { episodeKey: key };
    return (await this.#call("POST", "/get_episode_buffer", { client_uuid: this.clientUuid }, auth)).buffer as Array<Record<string, unknown>>;
  }

  /** One request, retried on connection errors and 502/503/504 for `retryForMs`. */
  async #call(method: string, path: string, body?: unknown, auth: Auth | boolean = "none"): Promise<Record<string, unknown>> {
    const control = auth === true ? "admin" : auth === false ? "none" : auth;
    const started = Date.now();
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.#once(method, path, body, control);
      } catch (error) {
        const retryable = isConnectionError(error) || (error instanceof SwarmRequestError && [502, 503, 504].includes(error.status));
        if (!retryable) throw error;
        if (Date.now() - started > this.#retryForMs) throw new SwarmUnreachableError(this.url, Date.now() - started, error);
        await sleep(backoffDelay(attempt, this.#backoff));
      }
    }
  }

  async #once(method: string, path: string, body?: unknown, auth: Auth | boolean = "none"): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if ((auth === true || auth === "admin") && this.#adminToken) headers["x-admin-token"] = this.#adminToken;
    if (typeof auth === "object") headers.authorization = `Bearer ${auth.episodeKey}`;
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(this.#requestTimeoutMs),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      throw new SwarmRequestError(response.status, path, `answer is not JSON: ${text.slice(0, 200)}`);
    }
    if (!response.ok) {
      const reason = (parsed as { error?: unknown; failure_reason?: unknown }).error ?? (parsed as { failure_reason?: unknown }).failure_reason ?? text;
      throw new SwarmRequestError(response.status, path, typeof reason === "string" ? reason : JSON.stringify(reason));
    }
    return parsed as Record<string, unknown>;
  }
}

function causeText(error: Error): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause ? ` (${cause.code ?? cause.message ?? ""})` : "";
}

/** How a request authenticates: not at all, with the admin token, or with an episode's key. */
type Auth = "none" | "admin" | { episodeKey: string };
