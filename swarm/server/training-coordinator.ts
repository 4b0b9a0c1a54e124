import { existsSync } from "node:fs";
import type { Engine } from "../engines/port/engine.ts";
import type { SwarmConfig } from "../config/config-schema.ts";
import { buildTrainingSamples } from "../tracking/index.ts";
import { sampleLimitsOf } from "../config/sample-limits.ts";
import { decideBatch, type StrategyDecision } from "./batching-strategies.ts";
import { DeterministicRounds, type DeterministicSlot } from "./deterministic-rounds.ts";
import { ProtocolEval, type ProtocolSampling } from "./protocol-eval.ts";
import { CheckpointStore } from "./checkpoint-store.ts";
import { ClientActivity } from "./client-activity.ts";
import { defaultEngineFactory, type EngineFactory } from "./engine-factory.ts";
import { EngineStateMachine, episodesMayBeOpen } from "./engine-state.ts";
import { EpisodeRegistry, type Episode, type EpisodeType } from "./episode-registry.ts";
import type { SwarmLogger } from "./logger.ts";
import { SamplePool, type PooledEpisode } from "./sample-pool.ts";
import { summarizeStep, type StepMetrics } from "./step-metrics.ts";

/** A refusal the HTTP layer turns into a 4xx answer. */
export class RequestRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "RequestRefused";
  }
}

export interface EndEpisodeRequest {
  clientUuid: string;
  episodeUuid: string;
  taskId: string;
  /** null: the client ended the episode without a reward (AgentJet's reward=None); never trained on. */
  reward: number | null;
  isSuccess: boolean | undefined;
  logMetrics: Record<string, number>;
}

/** AgentJet's throttle_policy of a claim: the client's share of a batch and the task it is about to run. */
export interface ThrottlePolicy {
  /** The client's share: it contributes at most ceil(B × ratio / Σ ratios of the clients with one) tasks per batch. */
  ratio: number;
  currentTaskId: string | undefined;
}

/** Why the engine went OFFLINE by failure (engine status `engine_failure`); cleared by the next start. */
export interface EngineFailure {
  stage: "boot" | "train" | "checkpoint";
  /** global_step when it failed (the step being trained is step + 1). */
  step: number;
  error: string;
  /** Unix seconds. */
  time: number;
}

/** Server settings that are not part of swarm.yaml (SwarmServerOptions passes them). */
export interface CoordinatorOptions {
  /**
   * C4/C5 only: the least time from the batch being fixed (ROLLING_POST) to leaving
   * WEIGHT_SYNCING, so a client that agreed and polls the engine state sees the step it
   * triggered (PROTOCOL.md §1). Default `defaultSyncObservableMs`.
   */
  syncObservableMs?: number;
  /** Distinct client_uuids that may hold episodes claimed without a credential (default 32). */
  maxUnkeyedClaimers?: number;
}

/**
 * AgentJet's client, after a successful agree_sync_weight, re-reads the engine state every
 * 5 s (from a cache its own thread refreshes at least every second) until it sees
 * ROLLING_POST or WEIGHT_SYNCING, with no timeout. 8 s covers one full poll interval, the
 * cache's age and a slow answer, so no agreeing client can miss the step.
 */
export const defaultSyncObservableMs = 8000;
export const defaultMaxUnkeyedClaimers = 32;

/** The last completion, kept for replay_latest_llm_call (its owner or the admin). */
export interface RecordedLatestCall {
  input: unknown;
  output: unknown;
  time: number;
}

export type ClaimOutcome =
  | {
      ok: true;
      episode: Episode;
      discardTimeoutSeconds: number;
      clampedFrom: number | undefined;
      slot?: DeterministicSlot | undefined;
      /** Set when the claim was handed a fixed-protocol eval episode: the step whose weights it measures. */
      evaluating?: number | undefined;
    }
  | { ok: false; failCause: string; status?: number };

/**
 * The server's one owner of training state: engine lifecycle, episodes, pool, batching
 * and the optimizer step. Every state change goes through the state machine; HTTP
 * handlers only call the methods here.
 *
 * Order matters in a few places and the comments say why. Not handled here: HTTP, auth,
 * the OpenAI wire format (gateway.ts), timers (the server calls `tick`).
 *
 * Leftovers: the batch is fixed when ROLLING → ROLLING_POST. Train episodes that end
 * while the step drains or trains join the pool for the next step (sampled by the policy
 * one step older: slightly off-policy, which the engine's clipped ratio tolerates), as do
 * pool episodes the strategy did not select. Pooled episodes do not survive a restart or
 * resume (they belong to the policy before it).
 */
export class TrainingCoordinator {
  readonly state = new EngineStateMachine();
  registry!: EpisodeRegistry;
  pool!: SamplePool;
  clients!: ClientActivity;
  checkpoints!: CheckpointStore;
  readonly metrics: StepMetrics[] = [];
  engine: Engine | undefined;
  globalStep = 0;
  /** Episodes of the step being collected or trained, taken from the pool at ROLLING_POST. */
  #batch: PooledEpisode[] = [];
  #work: Promise<void> = Promise.resolve();
  #saving: Promise<unknown> = Promise.resolve();
  #lastCheckpointStep = -1;
  #stepStartedAt = Date.now();
  #evalRewards: number[] = [];
  /**
   * Every train episode rewarded since the last step, batched or not. The batch's own
   * reward_mean is biased by the strategy (C3 drops groups whose rewards are all equal,
   * so a policy that solves the task never shows it there); this is the policy's level.
   */
  #rolloutRewards: number[] = [];
  /** Stragglers aborted at the drain deadline since the last step (drain_aborted_episodes). */
  #drainAborted = 0;
  /** All stragglers ever aborted at a drain deadline (counters). */
  drainAbortedTotal = 0;
  #rollingPostSince: number | undefined;
  /** Set when a boot or training step failed; the engine stays OFFLINE until a start. */
  failure: EngineFailure | undefined;
  /** Episodes ended with `reward: null` (no reward, never trained on). */
  endedWithoutReward = 0;
  /** The last recorded completion of any client (replay_latest_llm_call for the admin). */
  latestCall: RecordedLatestCall | undefined;
  /** The last completion of each client (replay_latest_llm_call for its owner); bounded. */
  readonly latestCallByClient = new Map<string, RecordedLatestCall>();
  readonly #syncObservableMs: number;
  readonly #maxUnkeyedClaimers: number;
  /** When the current step's batch was fixed (ROLLING_POST), for the C4/C5 hold. */
  #batchFixedAt = 0;
  /** Wakes the C4/C5 hold early when the engine changes state (stop_engine). */
  #wakeHold: (() => void) | undefined;
  /** Distinct tasks each client contributed to the last batch (pool information shows it). */
  lastBatchTasksPerClient = new Map<string, number>();
  /** Task-ratio shares by client, from the claims' throttle_policy. */
  readonly #ratios = new Map<string, number>();
  /** Deterministic mode's numbered rounds (deterministic-rounds.ts); undefined otherwise. */
  #rounds: DeterministicRounds | undefined;
  /** Fixed-protocol evaluation (protocol-eval.ts); undefined without `eval_protocol`. */
  #protocol: ProtocolEval | undefined;
  /** The metrics of the step being evaluated, published when its evaluation ends. */
  #evaluatedStep: StepMetrics | undefined;

  constructor(
    public config: SwarmConfig,
    private readonly logger: SwarmLogger,
    private readonly engineFactory: EngineFactory = defaultEngineFactory,
    options: CoordinatorOptions = {},
  ) {
    this.#syncObservableMs = options.syncObservableMs ?? defaultSyncObservableMs;
    this.#maxUnkeyedClaimers = options.maxUnkeyedClaimers ?? defaultMaxUnkeyedClaimers;
    this.#applyConfig();
    this.state.onTransition((record) => {
      this.#wakeHold?.();
      if (record.to === "ENGINE.ROLLING_POST") this.#batchFixedAt = record.at;
      // Closing here, inside the transition, means no request can slip into an episode
      // between the state change and the close.
      if (record.closesEpisodes) this.registry.closeAll(`engine left the rolling states: ${record.reason}`);
      this.#rollingPostSince = record.to === "ENGINE.ROLLING_POST" ? record.at : undefined;
      this.logger.info({ from: record.from, to: record.to, globalStep: this.globalStep }, record.reason);
    });
  }

  /** Replaces the configuration (sync_train_config); only while OFFLINE. */
  replaceConfig(config: SwarmConfig): void {
    this.checkReconfigurable();
    this.config = config;
    this.#applyConfig();
  }

  /** Throws the 409 sync_train_config answers outside OFFLINE. */
  checkReconfigurable(): void {
    if (this.state.state !== "ENGINE.OFFLINE")
      throw new RequestRefused(409, `sync_train_config works only while ENGINE.OFFLINE (engine is ${this.state.state}); call stop_engine first`);
  }

  /** Rebuilds what the configuration sizes (only while OFFLINE, when nothing is running). */
  #applyConfig(): void {
    const config = this.config;
    if (config.deterministic && config.swarm_mode_sample_collection_method.includes("agree"))
      throw new RequestRefused(
        400,
        `deterministic: true needs a strategy that batches by pool size (C1, C2 or C3), not ${config.swarm_mode_sample_collection_method}: when clients agree depends on timing`,
      );
    this.registry = new EpisodeRegistry({
      maxConcurrentEpisodes: config.max_env_worker,
      maxHistory: config.limits.max_cached_episodes,
      ...(config.max_claims_per_client === undefined ? {} : { maxPerClient: config.max_claims_per_client }),
      maxUnkeyedClaimers: this.#maxUnkeyedClaimers,
    });
    this.latestCallByClient.clear();
    this.#ratios.clear();
    this.pool = new SamplePool(config.limits.max_cached_episodes);
    this.clients = new ClientActivity(config.client_idle_timeout * 1000);
    this.checkpoints = new CheckpointStore(config.experiment_dir);
  }

  /**
   * OFFLINE → BOOTING, then loads the engine in the background (→ ROLLING). `resume`:
   * a checkpoint path, "latest", or "latest-if-any" (a fresh start when none exists).
   */
  start(resume?: string): void {
    if (this.state.state !== "ENGINE.OFFLINE") throw new RequestRefused(409, `start_engine works only while ENGINE.OFFLINE (engine is ${this.state.state})`);
    this.failure = undefined;
    this.state.transition("ENGINE.BOOTING", resume ? `loading the engine and resuming from ${resume}` : "loading the engine");
    const epoch = this.state.epoch;
    this.#work = this.#work.then(() => this.#boot(epoch, resume));
  }

  /** Resolves when the current boot or training step has finished (tests, shutdown). */
  idle(): Promise<void> {
    return this.#work;
  }

  async #boot(epoch: number, resume: string | undefined): Promise<void> {
    let engine: Engine | undefined;
    try {
      engine = await this.engineFactory(this.config);
      await engine.load();
      let step = 0;
      let metrics: StepMetrics[] = [];
      const path = await this.#checkpointPath(resume);
      if (path) {
        step = await engine.restore(path);
        metrics = ((await this.checkpoints.forStep(step))?.metrics ?? []) as StepMetrics[];
        this.#lastCheckpointStep = step;
      } else if (resume) {
        this.logger.warn({ experimentDir: this.config.experiment_dir }, "no checkpoint to resume from; starting fresh");
      }
      if (this.state.epoch !== epoch) {
        await engine.close();
        return;
      }
      this.engine = engine;
      this.globalStep = step;
      this.metrics.splice(0, this.metrics.length, ...metrics);
      this.pool.clear();
      this.clients.resetAgreements();
      this.#stepStartedAt = Date.now();
      // A resumed run numbers on from where its checkpoint's step ended (the pool is not kept).
      const seed = (this.config.model as { seed?: number }).seed ?? 1;
      const next = metrics.at(-1)?.deterministic_next_episode ?? 0;
      this.#rounds = this.config.deterministic ? new DeterministicRounds(seed, this.config.num_repeat, next) : undefined;
      this.#protocol = protocolEvalOf(this.config, seed);
      this.#evaluatedStep = undefined;
      this.state.transition("ENGINE.ROLLING", `rolling at step ${step}`);
      // `at_steps: [0, ...]`: the untrained weights are measured first, the same way.
      if (step === 0 && metrics.length === 0 && this.#protocol?.plannedAfter(0)) this.#openEvaluation({ step: 0, time: Date.now() / 1000 } as StepMetrics);
      // Deterministic mode: open the first round.
      if (this.#rounds) this.#considerBatch();
    } catch (error) {
      this.logger.error({ error: String(error) }, "engine failed to boot");
      await engine?.close().catch(() => undefined);
      if (this.state.epoch === epoch) {
        this.failure = { stage: "boot", step: this.globalStep, error: errorText(error), time: Date.now() / 1000 };
        this.state.transition("ENGINE.OFFLINE", `failed: engine failed to boot: ${errorText(error)}`);
      }
    }
  }

  async #checkpointPath(resume: string | undefined): Promise<string | undefined> {
    if (!resume) return undefined;
    if (resume !== "latest" && resume !== "latest-if-any") return resume;
    const latest = await this.checkpoints.latest();
    if (!latest && resume === "latest") throw new Error(`no checkpoint under ${this.checkpoints.checkpointDirectory}`);
    return latest?.path;
  }

  /** Any → OFFLINE; waits for a running boot or step, saves a checkpoint when training advanced. */
  async stop(reason: string, options: { checkpoint: boolean } = { checkpoint: true }): Promise<void> {
    if (this.state.state !== "ENGINE.OFFLINE") this.state.transition("ENGINE.OFFLINE", reason);
    await this.#work.catch(() => undefined);
    const engine = this.engine;
    if (!engine) return;
    // A step stopped during its evaluation is still a trained step: its record goes out
    // with what the evaluation measured so far, so the checkpoint and a resume know it.
    if (this.#evaluatedStep) await this.#recordStep(this.#withEvaluation(this.#evaluatedStep, "stopped"));
    if (options.checkpoint && this.globalStep > Math.max(0, this.#lastCheckpointStep))
      await this.saveCheckpoint().catch((error: unknown) => this.logger.error({ error: String(error) }, "checkpoint on stop failed"));
    this.engine = undefined;
    this.#batch = [];
    await engine.close();
  }

  /** stop, then start from a checkpoint ("latest" when no path is given). */
  async resume(path: string | undefined): Promise<void> {
    if (!path && !(await this.checkpoints.latest()))
      throw new RequestRefused(409, `no checkpoint under ${this.checkpoints.checkpointDirectory}; nothing to resume`);
    // Refuse before stopping anything: a typo in the path must not take a healthy run offline.
    if (path && !existsSync(path))
      throw new RequestRefused(400, `no checkpoint at ${path}; give a path returned by save_checkpoint, or omit it for the latest`);
    // A path can exist and still be no checkpoint: keep what a failed restore would lose.
    // The weights trained since the last checkpoint are saved first, and on failure the
    // server boots again from there (or fresh, when nothing was ever trained), so a bad
    // path changes nothing but the log.
    const step = this.globalStep;
    const fallback = this.engine && step > this.#lastCheckpointStep ? await this.saveCheckpoint() : (await this.checkpoints.latest())?.path;
    await this.stop("resuming from a checkpoint", { checkpoint: false });
    this.start(path ?? "latest");
    await this.idle();
    if (this.state.state === "ENGINE.ROLLING") return;
    const failure = this.state.detail.replace(/^failed: /, "");
    if (this.state.state === "ENGINE.OFFLINE") {
      this.start(fallback);
      await this.idle();
    }
    const backUp = (this.state.state as string) === "ENGINE.ROLLING";
    const back = backUp ? `; the server is back at step ${this.globalStep}${fallback ? ` from ${fallback}` : ""}` : "";
    throw new RequestRefused(400, `resume failed: ${failure}${back}`);
  }

  /** Writes a checkpoint of the current weights; returns its path. Serialized. */
  saveCheckpoint(): Promise<string> {
    const run = async (): Promise<string> => {
      const engine = this.engine;
      if (!engine) throw new RequestRefused(409, `no engine loaded (engine is ${this.state.state}); start_engine first`);
      const step = this.globalStep;
      const path = await engine.save(this.checkpoints.checkpointDirectory, step);
      await this.checkpoints.record(step, path, this.metrics);
      this.#lastCheckpointStep = Math.max(this.#lastCheckpointStep, step);
      this.logger.info({ step, path }, "checkpoint saved");
      return path;
    };
    const saving = this.#saving.then(run, run);
    this.#saving = saving.catch(() => undefined);
    return saving;
  }

  /** Clients whose throttle_policy ratio is remembered (bounded; pool information's quotas read them). */
  get taskRatioClients(): number {
    return this.#ratios.size;
  }

  /** Records a completion for replay_latest_llm_call; at most 1024 clients are remembered. */
  recordLatestCall(clientUuid: string, call: RecordedLatestCall): void {
    this.latestCall = call;
    this.latestCallByClient.delete(clientUuid);
    this.latestCallByClient.set(clientUuid, call);
    if (this.latestCallByClient.size > 1024) this.latestCallByClient.delete(this.latestCallByClient.keys().next().value!);
  }

  claim(request: {
    clientUuid: string;
    type: EpisodeType;
    discardTimeoutSeconds: number | undefined;
    throttle?: ThrottlePolicy | undefined;
    /** The TCP connection it came on, and whether it carried no credential (caps, PROTOCOL.md §2). */
    connectionId?: number | undefined;
    unkeyed?: boolean | undefined;
  }): ClaimOutcome {
    this.clients.seen(request.clientUuid);
    if (this.state.state !== "ENGINE.ROLLING") {
      // The phrases after the state are the ones AgentJet's client matches to pick its retry delay.
      const phrase =
        this.state.state === "ENGINE.ROLLING_POST"
          ? "Engine is in post-rolling phase. "
          : this.state.state === "ENGINE.WEIGHT_SYNCING"
            ? "Engine is syncing weights. "
            : "";
      // A failed engine is terminal for clients: no "retry later" (the SDK stops on "failed: ").
      if (this.state.state === "ENGINE.OFFLINE" && this.failure) return { ok: false, failCause: `${this.state.state}: ${this.state.detail}` };
      return { ok: false, failCause: `${this.state.state}: ${phrase}${this.state.detail}; claims are accepted only while ENGINE.ROLLING, retry later` };
    }
    // An idle claim may not hold a slot (or ROLLING_POST) longer than the server allows.
    const asked = request.discardTimeoutSeconds ?? this.config.episode_idle_timeout;
    const allowed = Math.min(asked, this.config.max_discard_episode_timeout);
    if (this.#protocol?.runningFor !== undefined) return this.#claimProtocolEpisode(request, allowed, asked);
    const throttle = request.type === "train" ? request.throttle : undefined;
    if (throttle) {
      // Any uuid may send a throttle_policy: the map keeps the most recent claimers only.
      this.#ratios.delete(request.clientUuid);
      this.#ratios.set(request.clientUuid, throttle.ratio);
      if (this.#ratios.size > maxRatioClients) this.#ratios.delete(this.#ratios.keys().next().value!);
      const refusal = this.#throttleRefusal(request.clientUuid, throttle);
      if (refusal) return { ok: false, failCause: `No available episodes to claim. ${refusal}` };
    }
    const numbered = this.#rounds !== undefined && request.type === "train";
    const index = numbered ? this.#rounds!.admit() : undefined;
    if (numbered && index === undefined)
      return {
        ok: false,
        failCause: `No available episodes to claim. deterministic: all ${this.#rounds!.roundLimit} numbered episodes up to step ${this.globalStep + 1} are claimed; retry after the step`,
      };
    return this.#register(request, {
      type: request.type,
      taskId: throttle?.currentTaskId,
      allowed,
      asked,
      numbered: index === undefined ? undefined : { source: this.#rounds!, index },
    });
  }

  /** Registers a claim the coordinator admitted; a number it was given is bound to it, or handed back when the registry refuses. */
  #register(
    request: Parameters<TrainingCoordinator["claim"]>[0],
    options: {
      type: EpisodeType;
      taskId: string | undefined;
      allowed: number;
      asked: number;
      numbered?: { source: DeterministicRounds | ProtocolEval; index: number } | undefined;
      evaluating?: number | undefined;
    },
  ): ClaimOutcome {
    const result = this.registry.claim({
      clientUuid: request.clientUuid,
      type: options.type,
      discardTimeoutMs: options.allowed * 1000,
      step: this.globalStep,
      taskId: options.taskId,
      connectionId: request.connectionId,
      unkeyed: request.unkeyed,
    });
    const numbered = options.numbered;
    if (!result.ok) {
      numbered?.source.release(numbered.index);
      // The per-client cap is this client's own doing: a 429 it cannot mistake for a full server.
      return result.perClientCap
        ? { ok: false, failCause: result.failCause, status: 429 }
        : { ok: false, failCause: `No available episodes to claim. ${result.failCause}` };
    }
    numbered?.source.bind(result.episode.episodeUuid, numbered.index);
    const clamped = request.discardTimeoutSeconds !== undefined && options.allowed < options.asked;
    return {
      ok: true,
      episode: result.episode,
      discardTimeoutSeconds: options.allowed,
      clampedFrom: clamped ? options.asked : undefined,
      slot: numbered?.source.slot(numbered.index),
      ...(options.evaluating === undefined ? {} : { evaluating: options.evaluating }),
    };
  }

  /** During an evaluation every claim plays one of its numbered eval episodes (protocol-eval.ts). */
  #claimProtocolEpisode(request: Parameters<TrainingCoordinator["claim"]>[0], allowed: number, asked: number): ClaimOutcome {
    const protocol = this.#protocol!;
    const index = protocol.admit();
    if (index === undefined)
      return {
        ok: false,
        failCause: `No available episodes to claim. eval_protocol: all ${protocol.settings.episodes} eval episodes of the evaluation after step ${protocol.runningFor} are claimed; retry after it`,
      };
    return this.#register(request, { type: "eval", taskId: undefined, allowed, asked, numbered: { source: protocol, index }, evaluating: protocol.runningFor });
  }

  /** The fixed sampling of an evaluation episode; undefined for every other episode. */
  protocolSampling(episode: Episode): ProtocolSampling | undefined {
    return this.#protocol?.owns(episode.episodeUuid) ? this.#protocol.settings.sampling : undefined;
  }

  /** Tasks per batch each client with a throttle_policy may contribute (C2 and C3 only). */
  clientTaskQuotas(): Map<string, number> | undefined {
    const method = this.config.swarm_mode_sample_collection_method;
    // Deterministic mode: which client plays an episode is timing, so per-client shares cannot shape batches.
    if (this.#rounds || this.#ratios.size === 0 || (method !== "rollout_until_finish_enough_tasks" && method !== "rollout_until_finish_enough_non_dummy_tasks"))
      return undefined;
    // A client that went quiet (client_idle_timeout) gives its share back, so a dead client
    // cannot stall the batch forever.
    const active = new Set(this.clients.active());
    const shares = [...this.#ratios].filter(([client]) => active.has(client) || this.registry.runningCountOf(client) > 0);
    const total = shares.reduce((sum, [, ratio]) => sum + ratio, 0);
    const quotas = new Map<string, number>();
    // Ceil: the quotas are caps, and caps that add up to less than B would never fill a batch.
    for (const [client, ratio] of shares) quotas.set(client, Math.max(1, Math.ceil((this.config.train_batch_size * ratio) / total - 1e-9)));
    return quotas;
  }

  /** The claim-side half of the task ratios: a new task past the client's quota waits. */
  #throttleRefusal(clientUuid: string, throttle: ThrottlePolicy): string | undefined {
    const quota = this.clientTaskQuotas()?.get(clientUuid);
    if (quota === undefined || throttle.currentTaskId === undefined) return undefined;
    // As in AgentJet, a ratio above the share gives slack (its default 1.5 allows 1.5 B tasks
    // in flight), so a task whose group never completes cannot block the client for good.
    const limit = Math.max(quota, Math.ceil(this.config.train_batch_size * throttle.ratio - 1e-9));
    const tasks = this.pool.taskIdsOf(clientUuid);
    for (const episode of this.registry.runningEpisodes()) if (episode.clientUuid === clientUuid && episode.taskId) tasks.add(episode.taskId);
    if (tasks.has(throttle.currentTaskId) || tasks.size < limit) return undefined;
    return `throttle_policy: this client already has ${tasks.size} tasks waiting for the batch (at most ${limit}; its share of a batch is ${quota} of ${this.config.train_batch_size}); retry after the next step`;
  }

  /** The seed of an episode's next completion: in deterministic mode derived from its number and the call's place. */
  samplingSeed(episode: Episode, requested: number | undefined): number | undefined {
    const fixed = this.#protocol?.samplingSeed(episode.episodeUuid, episode.calls.length);
    if (fixed !== undefined) return fixed;
    const index = this.#rounds?.indexOf(episode.episodeUuid);
    return index === undefined ? requested : this.#rounds!.samplingSeed(index, episode.calls.length, requested);
  }

  /** Ends a running episode with its reward; train episodes go to the pool as samples. */
  end(request: EndEpisodeRequest): void {
    const episode = this.#ownedEpisode(request.clientUuid, request.episodeUuid);
    if (episode.status !== "running") throw new RequestRefused(400, this.#notRunningReason(episode));
    if (this.#protocol?.owns(episode.episodeUuid)) {
      this.registry.finish(
        episode.episodeUuid,
        "ended",
        request.reward === null ? "protocol eval episode ended without a reward" : "protocol eval episode rewarded (never trained on)",
      );
      if (request.reward !== null) this.clients.rewarded(request.clientUuid);
      this.#protocol.record(episode.episodeUuid, request.reward);
      episode.taskId = request.taskId;
      if (request.reward !== null) episode.reward = request.reward;
      this.#maybeEndEvaluation();
      return;
    }
    // Deterministic mode: the episode's number, its place in the batch order (arrival order otherwise).
    const index = this.#rounds?.consume(episode.episodeUuid);
    if (request.reward === null) {
      // AgentJet's WorkflowOutput(reward=None): the episode happened but says nothing to learn from.
      this.registry.finish(episode.episodeUuid, "ended", "ended without a reward (reward: null); not trained on");
      this.endedWithoutReward += 1;
      episode.taskId = request.taskId;
      this.#maybeDrain();
      return;
    }
    const reward = request.reward;
    this.clients.rewarded(request.clientUuid);
    const calls = episode.calls;
    if (episode.type === "eval") {
      this.registry.finish(episode.episodeUuid, "ended", "eval episode rewarded (never trained on)");
      this.#evalRewards.push(reward);
    } else {
      let built: ReturnType<typeof buildTrainingSamples>;
      try {
        built = buildTrainingSamples(calls, {
          compareLevel: this.config.compare_level,
          ignoreTools: this.config.ignore_tools,
          agentjetCompat: this.config.agentjet_compat,
          limits: sampleLimitsOf(this.config),
          taskId: request.taskId,
          episodeUuid: episode.episodeUuid,
          reward,
          encodeChat: (messages, options) => this.engine!.encodeChat(messages, options),
        });
      } catch (error) {
        this.registry.finish(episode.episodeUuid, "aborted", `samples could not be built: ${errorText(error)}`);
        this.#maybeDrain();
        throw error;
      }
      this.registry.finish(episode.episodeUuid, "ended", "rewarded");
      // AgentJet's limits (swarm/config/agentjet.ts) change what is trained: said, as AgentJet warns.
      const { droppedSamples, truncatedSamples, mad } = built.stats;
      if (droppedSamples > 0 || truncatedSamples > 0 || mad)
        this.logger.warn(
          { episodeUuid: episode.episodeUuid, droppedSamples, truncatedSamples, mad },
          "samples changed by the AgentJet limits: max_samples_per_episode (dropped, at random), max_prompt_tokens/max_response_tokens (truncated), madness (madness.reward)",
        );
      this.#rolloutRewards.push(reward);
      this.pool.add({
        episodeUuid: episode.episodeUuid,
        taskId: request.taskId,
        reward,
        sequence: index ?? this.pool.nextSequence(),
        clientUuid: request.clientUuid,
        isSuccess: request.isSuccess,
        samples: built.samples,
        stats: built.stats,
        logMetrics: request.logMetrics,
        completedAt: Date.now(),
      });
    }
    episode.taskId = request.taskId;
    episode.reward = reward;
    this.#considerBatch();
    this.#maybeDrain();
  }

  /** Aborts a running episode (idempotent: unknown or finished episodes are fine). */
  abort(clientUuid: string, episodeUuid: string): void {
    const episode = this.registry.find(episodeUuid);
    if (!episode || episode.status !== "running") return;
    if (episode.clientUuid !== clientUuid)
      throw new RequestRefused(404, `Episode ${episodeUuid} is claimed by a different client; client_uuid ${clientUuid} may not abort it`);
    this.clients.seen(clientUuid);
    this.registry.finish(episodeUuid, "aborted", "aborted by its client");
    this.#maybeEndEvaluation();
    this.#maybeDrain();
  }

  canContinue(clientUuid: string, episodeUuid: string): boolean {
    this.clients.seen(clientUuid);
    const episode = this.registry.running(episodeUuid);
    return episode !== undefined && episode.clientUuid === clientUuid;
  }

  /**
   * A client's agreement to train now (C4, C5). Refused with 400, which AgentJet's client
   * retries on (every 2 s), when it could not lead to a step: outside ROLLING (in
   * ROLLING_POST the batch is already fixed: the client's retry then sees the step and
   * stops), before the client is active (it has ended no rewarded episode), or while the
   * pool holds nothing to train on. Returns whether this agreement fixed the batch.
   */
  agreeSyncWeight(clientUuid: string): { triggered: boolean } {
    if (this.state.state !== "ENGINE.ROLLING")
      throw new RequestRefused(
        400,
        this.state.state === "ENGINE.ROLLING_POST"
          ? `agree_sync_weight counts only while ENGINE.ROLLING: engine is ENGINE.ROLLING_POST, the batch of step ${this.globalStep + 1} is already fixed and it trains next`
          : `agree_sync_weight counts only while ENGINE.ROLLING (engine is ${this.state.state})`,
      );
    this.clients.seen(clientUuid);
    if (!this.clients.active().includes(clientUuid))
      throw new RequestRefused(
        400,
        `agree_sync_weight: client ${clientUuid} is not active yet: it has not ended a rewarded episode (or was idle past client_idle_timeout); end one and agree again`,
      );
    if (this.pool.size === 0)
      throw new RequestRefused(
        400,
        "agree_sync_weight: the pool is empty, so a step would have nothing to train on; end a rewarded train episode and agree again",
      );
    this.clients.agree(clientUuid);
    const before = this.state.epoch;
    this.#considerBatch();
    return { triggered: this.state.epoch !== before };
  }

  /** Periodic housekeeping: reclaim idle episodes, re-check agreement strategies. */
  tick(): void {
    const reclaimed = this.registry.reclaimIdle();
    for (const episode of reclaimed)
      this.logger.warn({ episodeUuid: episode.episodeUuid, clientUuid: episode.clientUuid }, `episode reclaimed: ${episode.closeReason}`);
    this.#maybeEndEvaluation();
    this.#considerBatch();
    this.#abortStragglers();
    this.#maybeDrain();
  }

  /** Past drain_timeout in ROLLING_POST, the episodes still running are aborted and counted. */
  #abortStragglers(now = Date.now()): void {
    if (this.state.state !== "ENGINE.ROLLING_POST" || this.#rollingPostSince === undefined) return;
    if (now - this.#rollingPostSince < this.config.drain_timeout * 1000) return;
    const stragglers = this.registry.runningEpisodes();
    if (stragglers.length === 0) return;
    for (const episode of stragglers)
      this.registry.finish(
        episode.episodeUuid,
        "aborted",
        `${drainDeadlineReason}: still running ${this.config.drain_timeout} s after the batch was fixed (drain_timeout)`,
        now,
      );
    this.#drainAborted += stragglers.length;
    this.drainAbortedTotal += stragglers.length;
    this.logger.warn({ aborted: stragglers.length, drainTimeout: this.config.drain_timeout }, "drain deadline reached: straggling episodes aborted");
  }

  decision(): StrategyDecision {
    const quotas = this.clientTaskQuotas();
    return decideBatch({
      method: this.config.swarm_mode_sample_collection_method,
      trainBatchSize: this.config.train_batch_size,
      numRepeat: this.config.num_repeat,
      episodes: this.pool.summaries(),
      activeClients: this.clients.active(),
      agreedClients: this.clients.agreed(),
      ...(quotas ? { clientTaskQuotas: quotas } : {}),
    });
  }

  /** AgentJet's answers: an unknown episode is a 400, another client's a 404. */
  #ownedEpisode(clientUuid: string, episodeUuid: string): Episode {
    const episode = this.registry.find(episodeUuid);
    if (!episode)
      throw new RequestRefused(400, `Episode ${episodeUuid} not found: unknown episode_uuid (never claimed here, or forgotten past max_cached_episodes)`);
    if (episode.clientUuid !== clientUuid)
      throw new RequestRefused(404, `Episode ${episodeUuid} is claimed by a different client; client_uuid ${clientUuid} may not end it`);
    return episode;
  }

  /**
   * Why a finished episode's end is refused (400, as AgentJet). A straggler aborted at the
   * drain deadline names ENGINE.WEIGHT_SYNCING, the phrase AgentJet's client logs as an
   * expected warning ("discarded during weight sync") instead of raising in the rollout.
   */
  #notRunningReason(episode: Episode): string {
    const why = `episode ${episode.episodeUuid} is already ${episode.status} (${episode.closeReason ?? ""}); its reward is not recorded`;
    if (episode.status === "aborted" && episode.closeReason?.startsWith(drainDeadlineReason))
      return `${why}. The engine moved on to ENGINE.WEIGHT_SYNCING without it (drain_timeout ${this.config.drain_timeout} s); this is expected for a straggler`;
    if (!episodesMayBeOpen(this.state.state)) return `${why}. Engine is not in rolling state. Current status: [${this.state.state}]`;
    return why;
  }

  /** ROLLING → ROLLING_POST when the strategy says the pool is ready; the batch is fixed now. */
  #considerBatch(): void {
    if (this.state.state !== "ENGINE.ROLLING" || this.#protocol?.runningFor !== undefined) return;
    // Deterministic mode decides only when the round's episodes have all ended, so the pool's content is fixed.
    if (this.#rounds && !this.#rounds.settle(this.registry)) return;
    const decision = this.decision();
    if (decision.discarded.length > 0) this.pool.discard(decision.discarded);
    if (!decision.ready) {
      this.#rounds?.extend(decision.progress);
      return;
    }
    this.#batch = this.pool.take(decision.selected);
    const tasks = new Map<string, Set<string>>();
    for (const episode of this.#batch) (tasks.get(episode.clientUuid) ?? tasks.set(episode.clientUuid, new Set()).get(episode.clientUuid)!).add(episode.taskId);
    this.lastBatchTasksPerClient = new Map([...tasks].map(([client, ids]) => [client, ids.size]));
    this.clients.resetAgreements();
    this.state.transition("ENGINE.ROLLING_POST", `batch of ${this.#batch.length} episodes ready; draining ${this.registry.runningCount} running episodes`);
  }

  /**
   * C4/C5: stays in WEIGHT_SYNCING until syncObservableMs have passed since the batch was
   * fixed, so every client that agreed sees the step however it polls (AgentJet's client
   * waits for ROLLING_POST or WEIGHT_SYNCING, every 5 s, with no timeout: a step shorter
   * than its poll would leave it waiting forever). A state change (stop) ends the hold.
   */
  async #holdObservable(epoch: number): Promise<void> {
    const method = this.config.swarm_mode_sample_collection_method;
    if (method !== "rollout_until_all_clients_agree_sync_weight" && method !== "rollout_until_any_client_agrees_sync_weight") return;
    const until = this.#batchFixedAt + this.#syncObservableMs;
    if (until <= Date.now() || this.state.epoch !== epoch) return;
    this.state.describe(`${this.state.detail}; step ${this.globalStep} trained, held in WEIGHT_SYNCING for agreeing clients to observe`);
    // A timer may fire a millisecond before the wall clock says it is due: wait again then,
    // so the hold is never shorter than promised.
    while (Date.now() < until && this.state.epoch === epoch) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, until - Date.now());
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.#wakeHold = done;
      });
      this.#wakeHold = undefined;
    }
  }

  /** ROLLING_POST → WEIGHT_SYNCING once no episode is running. */
  #maybeDrain(): void {
    if (this.state.state !== "ENGINE.ROLLING_POST" || this.registry.runningCount > 0) return;
    const batch = this.#batch;
    this.#batch = [];
    this.state.transition("ENGINE.WEIGHT_SYNCING", `training step ${this.globalStep + 1} on ${batch.length} episodes`);
    this.#work = this.#work.then(() => this.#train(batch));
  }

  /** Publishes a trained step's metrics (GET /metrics, metrics.jsonl). */
  async #recordStep(metrics: StepMetrics): Promise<void> {
    this.metrics.push(metrics);
    await this.checkpoints.appendMetrics(metrics).catch((error: unknown) => this.logger.error({ error: String(error) }, "metrics.jsonl append failed"));
    this.logger.info({ step: metrics.step, reward_mean: metrics.reward_mean, episodes: metrics.episodes }, "step done");
  }

  /** After a step is recorded: the C4/C5 hold, the checkpoint it is due, then finish or roll on. */
  async #afterStep(epoch: number): Promise<void> {
    try {
      if (this.state.epoch !== epoch) return;
      await this.#holdObservable(epoch);
      if (this.state.epoch !== epoch) return;
      const maxSteps = this.config.max_steps;
      const finished = maxSteps > 0 && this.globalStep >= maxSteps;
      if (finished || (this.config.save_freq > 0 && this.globalStep > 0 && this.globalStep % this.config.save_freq === 0)) {
        this.state.transition("ENGINE.WEIGHT_EXPORTING", `saving the checkpoint of step ${this.globalStep}`);
        epoch = this.state.epoch;
        await this.saveCheckpoint();
        if (this.state.epoch !== epoch) return;
      }
      if (finished) {
        this.state.transition("ENGINE.OFFLINE", `finished: max_steps (${maxSteps}) reached at step ${this.globalStep}`);
        return;
      }
      this.state.transition("ENGINE.ROLLING", `rolling at step ${this.globalStep}`);
      // Leftovers may already fill the next batch.
      this.#considerBatch();
    } catch (error) {
      this.logger.error({ error: String(error), step: this.globalStep }, "saving the step failed");
      if (this.state.epoch === epoch) this.#failAfterTraining(error);
    }
  }

  /** The step trained and its metrics are recorded; what failed is saving it. */
  #failAfterTraining(error: unknown): void {
    this.failure = { stage: "checkpoint", step: this.globalStep, error: errorText(error), time: Date.now() / 1000 };
    this.state.transition("ENGINE.OFFLINE", `failed: the checkpoint of step ${this.globalStep} failed: ${errorText(error)}; ${untilRestarted}`);
  }

  /** Starts the evaluation of the current weights; the step's record waits for it, so whoever reads the step reads both. */
  #openEvaluation(metrics: StepMetrics): void {
    const protocol = this.#protocol!;
    this.#evaluatedStep = metrics;
    protocol.open(metrics.step);
    this.state.describe(
      `evaluating the weights of step ${metrics.step} on ${protocol.settings.episodes} fixed-protocol eval episodes (eval_protocol); every claim plays one until they have all ended`,
    );
  }

  /** The evaluation has every episode it plans: the step is recorded with it, then training goes on. */
  #maybeEndEvaluation(): void {
    const protocol = this.#protocol;
    const evaluated = this.#evaluatedStep;
    if (!protocol || !evaluated || this.state.state !== "ENGINE.ROLLING" || !protocol.settle(this.registry)) return;
    const metrics = this.#withEvaluation(evaluated, "complete");
    // Through the usual states, so a client polling the engine sees a step boundary.
    this.state.transition("ENGINE.ROLLING_POST", `the evaluation of step ${metrics.step} is complete (${metrics.protocol_eval_episodes} episodes)`);
    this.state.transition("ENGINE.WEIGHT_SYNCING", `recording step ${metrics.step} with its evaluation`);
    const epoch = this.state.epoch;
    this.#work = this.#work.then(async () => {
      await this.#recordStep(metrics);
      await this.#afterStep(epoch);
    });
  }

  /** The step's metrics with what its evaluation measured; ends the evaluation. */
  #withEvaluation(metrics: StepMetrics, how: "complete" | "stopped"): StepMetrics {
    this.#evaluatedStep = undefined;
    const result = this.#protocol!.close();
    return {
      ...metrics,
      ...(result.rewardMean === undefined ? {} : { protocol_eval_reward_mean: result.rewardMean }),
      protocol_eval_episodes: result.episodes,
      ...(how === "stopped" ? { protocol_eval_incomplete: 1 } : {}),
    };
  }

  async #train(batch: PooledEpisode[]): Promise<void> {
    const epoch = this.state.epoch;
    const engine = this.engine!;
    const trainStartedAt = Date.now();
    let trained = false;
    try {
      const samples = batch.flatMap((episode) => episode.samples);
      const result = samples.length > 0 ? await engine.train(samples, this.globalStep) : { metrics: {} };
      // The weights have changed even if the engine was stopped meanwhile: count the step.
      this.globalStep += 1;
      trained = true;
      const now = Date.now();
      const metrics = summarizeStep({
        step: this.globalStep,
        batch,
        engineMetrics: result.metrics,
        stepTimeMs: now - this.#stepStartedAt,
        trainTimeMs: now - trainStartedAt,
        now,
      });
      // Zero when the whole batch came from leftovers of the previous step.
      metrics.rollout_episodes = this.#rolloutRewards.length;
      metrics.drain_aborted_episodes = this.#drainAborted;
      this.#drainAborted = 0;
      if (this.#rounds) metrics.deterministic_next_episode = this.#rounds.nextIndex;
      if (this.#rolloutRewards.length > 0) {
        // Summed in value order: the same rewards give the same mean whatever order they arrived in.
        metrics.rollout_reward_mean = sortedSum(this.#rolloutRewards) / this.#rolloutRewards.length;
        this.#rolloutRewards = [];
      }
      if (this.#evalRewards.length > 0) {
        metrics.eval_reward_mean = sortedSum(this.#evalRewards) / this.#evalRewards.length;
        metrics.eval_episodes = this.#evalRewards.length;
        this.#evalRewards = [];
      }
      this.#stepStartedAt = now;
      if (this.#protocol?.plannedAfter(this.globalStep) && this.state.epoch === epoch) {
        this.state.transition("ENGINE.ROLLING", `rolling at step ${this.globalStep}`);
        this.#openEvaluation(metrics);
        return;
      }
      await this.#recordStep(metrics);
      await this.#afterStep(epoch);
    } catch (error) {
      this.logger.error({ error: String(error), step: this.globalStep }, "training step failed");
      if (this.state.epoch !== epoch) return;
      if (trained) {
        this.#failAfterTraining(error);
        return;
      }
      const failedStep = this.globalStep + 1;
      this.failure = { stage: "train", step: this.globalStep, error: errorText(error), time: Date.now() / 1000 };
      // The failure is a record of its own, so metrics.jsonl shows why training stopped.
      const record: StepMetrics = {
        ...summarizeStep({
          step: failedStep,
          batch,
          engineMetrics: {},
          stepTimeMs: Date.now() - this.#stepStartedAt,
          trainTimeMs: Date.now() - trainStartedAt,
          now: Date.now(),
        }),
        step_failed: 1,
        drain_aborted_episodes: this.#drainAborted,
      };
      this.#drainAborted = 0;
      this.metrics.push(record);
      this.state.transition("ENGINE.OFFLINE", `failed: the training step ${failedStep} failed: ${errorText(error)}; ${untilRestarted}`);
      await this.checkpoints.appendMetrics({ ...record, error: errorText(error) } as unknown as StepMetrics).catch(() => undefined);
    }
  }
}

const drainDeadlineReason = "drain deadline";
const untilRestarted = "the server will not roll again until start_engine or resume_from_checkpoint";

/** The fixed-protocol evaluation the config plans, its sampling resolved against `sampling`; undefined without one. */
function protocolEvalOf(config: SwarmConfig, modelSeed: number): ProtocolEval | undefined {
  const protocol = config.eval_protocol;
  if (!protocol) return undefined;
  const fixed = protocol.sampling === "config" ? {} : protocol.sampling;
  return new ProtocolEval({
    atSteps: protocol.at_steps ?? [],
    every: protocol.every,
    episodes: protocol.episodes,
    seed: protocol.seed ?? modelSeed,
    sampling: {
      temperature: fixed.temperature ?? config.sampling.temperature,
      topP: fixed.top_p ?? config.sampling.top_p,
      maxTokens: fixed.max_tokens ?? config.sampling.max_tokens,
    },
  });
}
/** Clients whose task ratio is remembered (far more than any swarm runs; invented uuids must not grow it without end). */
const maxRatioClients = 4096;

function sortedSum(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b).reduce((sum, value) => sum + value, 0);
}

/** One line for a failure; a schema error names each field and its bound instead of zod's JSON. */
function errorText(error: unknown): string {
  const issues = (error as { issues?: unknown }).issues;
  if (Array.isArray(issues) && issues.length > 0) {
    const described = issues
      .slice(0, 3)
      .map((issue: { path?: unknown[]; message?: string }) => `${(issue.path ?? []).map(String).join(".") || "(config)"}: ${issue.message ?? "invalid"}`);
    return `invalid engine configuration: ${described.join("; ")}`;
  }
  return error instanceof Error ? error.message : String(error);
}
