import { existsSync } from "node:fs";
import type { Engine } from "../engines/engine.ts";
import type { SwarmConfig } from "../config-schema.ts";
import { buildTrainingSamples } from "../tracking/index.ts";
import { decideBatch, type StrategyDecision } from "./batching-strategies.ts";
import { CheckpointStore } from "./checkpoint-store.ts";
import { ClientActivity } from "./client-activity.ts";
import { defaultEngineFactory, type EngineFactory } from "./engine-factory.ts";
import { EngineStateMachine } from "./engine-state.ts";
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
  reward: number;
  isSuccess: boolean | undefined;
  logMetrics: Record<string, number>;
}

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

  constructor(
    public config: SwarmConfig,
    private readonly logger: SwarmLogger,
    private readonly engineFactory: EngineFactory = defaultEngineFactory,
  ) {
    this.#applyConfig();
    this.state.onTransition((record) => {
      // Closing here, inside the transition, means no request can slip into an episode
      // between the state change and the close.
      if (record.closesEpisodes) this.registry.closeAll(`engine left the rolling states: ${record.reason}`);
      this.logger.info({ from: record.from, to: record.to, globalStep: this.globalStep }, record.reason);
    });
  }

  /** Replaces the configuration (sync_train_config); only while OFFLINE. */
  replaceConfig(config: SwarmConfig): void {
    if (this.state.state !== "ENGINE.OFFLINE")
      throw new RequestRefused(409, `sync_train_config works only while ENGINE.OFFLINE (engine is ${this.state.state}); call stop_engine first`);
    this.config = config;
    this.#applyConfig();
  }

  /** Rebuilds what the configuration sizes (only while OFFLINE, when nothing is running). */
  #applyConfig(): void {
    const config = this.config;
    this.registry = new EpisodeRegistry({ maxConcurrentEpisodes: config.max_env_worker, maxHistory: config.limits.max_cached_episodes });
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
      this.state.transition("ENGINE.ROLLING", `rolling at step ${step}`);
    } catch (error) {
      this.logger.error({ error: String(error) }, "engine failed to boot");
      await engine?.close().catch(() => undefined);
      if (this.state.epoch === epoch) this.state.transition("ENGINE.OFFLINE", `engine failed to boot: ${errorText(error)}`);
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
    const failure = this.state.detail;
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

  claim(request: {
    clientUuid: string;
    type: EpisodeType;
    discardTimeoutSeconds: number | undefined;
  }): { ok: true; episode: Episode } | { ok: false; failCause: string } {
    this.clients.seen(request.clientUuid);
    if (this.state.state !== "ENGINE.ROLLING") {
      // The phrases after the state are the ones AgentJet's client matches to pick its retry delay.
      const phrase =
        this.state.state === "ENGINE.ROLLING_POST"
          ? "Engine is in post-rolling phase. "
          : this.state.state === "ENGINE.WEIGHT_SYNCING"
            ? "Engine is syncing weights. "
            : "";
      return { ok: false, failCause: `${this.state.state}: ${phrase}${this.state.detail}; claims are accepted only while ENGINE.ROLLING, retry later` };
    }
    const discardTimeoutMs = (request.discardTimeoutSeconds ?? this.config.episode_idle_timeout) * 1000;
    const result = this.registry.claim({ clientUuid: request.clientUuid, type: request.type, discardTimeoutMs, step: this.globalStep });
    return result.ok ? result : { ok: false, failCause: `No available episodes to claim. ${result.failCause}` };
  }

  /** Ends a running episode with its reward; train episodes go to the pool as samples. */
  end(request: EndEpisodeRequest): void {
    const episode = this.#ownedEpisode(request.clientUuid, request.episodeUuid);
    if (episode.status !== "running")
      throw new RequestRefused(409, `episode ${request.episodeUuid} is already ${episode.status} (${episode.closeReason ?? ""}); its reward is not recorded`);
    this.clients.rewarded(request.clientUuid);
    const calls = episode.calls;
    if (episode.type === "eval") {
      this.registry.finish(episode.episodeUuid, "ended", "eval episode rewarded (never trained on)");
      this.#evalRewards.push(request.reward);
    } else {
      let built: ReturnType<typeof buildTrainingSamples>;
      try {
        built = buildTrainingSamples(calls, {
          compareLevel: this.config.compare_level,
          taskId: request.taskId,
          episodeUuid: episode.episodeUuid,
          reward: request.reward,
          encodeChat: (messages, options) => this.engine!.encodeChat(messages, options),
        });
      } catch (error) {
        this.registry.finish(episode.episodeUuid, "aborted", `samples could not be built: ${errorText(error)}`);
        this.#maybeDrain();
        throw error;
      }
      this.registry.finish(episode.episodeUuid, "ended", "rewarded");
      this.#rolloutRewards.push(request.reward);
      this.pool.add({
        episodeUuid: episode.episodeUuid,
        taskId: request.taskId,
        reward: request.reward,
        sequence: this.pool.nextSequence(),
        clientUuid: request.clientUuid,
        isSuccess: request.isSuccess,
        samples: built.samples,
        stats: built.stats,
        logMetrics: request.logMetrics,
        completedAt: Date.now(),
      });
    }
    episode.taskId = request.taskId;
    episode.reward = request.reward;
    this.#considerBatch();
    this.#maybeDrain();
  }

  /** Aborts a running episode (idempotent: unknown or finished episodes are fine). */
  abort(clientUuid: string, episodeUuid: string): void {
    const episode = this.registry.find(episodeUuid);
    if (!episode || episode.status !== "running") return;
    if (episode.clientUuid !== clientUuid)
      throw new RequestRefused(403, `episode ${episodeUuid} belongs to another client; client_uuid ${clientUuid} may not abort it`);
    this.clients.seen(clientUuid);
    this.registry.finish(episodeUuid, "aborted", "aborted by its client");
    this.#maybeDrain();
  }

  canContinue(clientUuid: string, episodeUuid: string): boolean {
    this.clients.seen(clientUuid);
    const episode = this.registry.running(episodeUuid);
    return episode !== undefined && episode.clientUuid === clientUuid;
  }

  agreeSyncWeight(clientUuid: string): void {
    if (this.state.state !== "ENGINE.ROLLING")
      throw new RequestRefused(409, `agree_sync_weight counts only while ENGINE.ROLLING (engine is ${this.state.state})`);
    this.clients.agree(clientUuid);
    this.#considerBatch();
  }

  /** Periodic housekeeping: reclaim idle episodes, re-check agreement strategies. */
  tick(): void {
    const reclaimed = this.registry.reclaimIdle();
    for (const episode of reclaimed)
      this.logger.warn({ episodeUuid: episode.episodeUuid, clientUuid: episode.clientUuid }, `episode reclaimed: ${episode.closeReason}`);
    this.#considerBatch();
    this.#maybeDrain();
  }

  decision(): StrategyDecision {
    return decideBatch({
      method: this.config.swarm_mode_sample_collection_method,
      trainBatchSize: this.config.train_batch_size,
      numRepeat: this.config.num_repeat,
      episodes: this.pool.summaries(),
      activeClients: this.clients.active(),
      agreedClients: this.clients.agreed(),
    });
  }

  #ownedEpisode(clientUuid: string, episodeUuid: string): Episode {
    const episode = this.registry.find(episodeUuid);
    if (!episode) throw new RequestRefused(404, `unknown episode_uuid ${episodeUuid} (never claimed here, or forgotten past max_cached_episodes)`);
    if (episode.clientUuid !== clientUuid)
      throw new RequestRefused(403, `episode ${episodeUuid} was claimed by another client; client_uuid ${clientUuid} may not end it`);
    return episode;
  }

  /** ROLLING → ROLLING_POST when the strategy says the pool is ready; the batch is fixed now. */
  #considerBatch(): void {
    if (this.state.state !== "ENGINE.ROLLING") return;
    const decision = this.decision();
    if (decision.discarded.length > 0) this.pool.discard(decision.discarded);
    if (!decision.ready) return;
    this.#batch = this.pool.take(decision.selected);
    this.clients.resetAgreements();
    this.state.transition("ENGINE.ROLLING_POST", `batch of ${this.#batch.length} episodes ready; draining ${this.registry.runningCount} running episodes`);
  }

  /** ROLLING_POST → WEIGHT_SYNCING once no episode is running. */
  #maybeDrain(): void {
    if (this.state.state !== "ENGINE.ROLLING_POST" || this.registry.runningCount > 0) return;
    const batch = this.#batch;
    this.#batch = [];
    this.state.transition("ENGINE.WEIGHT_SYNCING", `training step ${this.globalStep + 1} on ${batch.length} episodes`);
    this.#work = this.#work.then(() => this.#train(batch));
  }

  async #train(batch: PooledEpisode[]): Promise<void> {
    let epoch = this.state.epoch;
    const engine = this.engine!;
    const trainStartedAt = Date.now();
    try {
      const samples = batch.flatMap((episode) => episode.samples);
      const result = samples.length > 0 ? await engine.train(samples, this.globalStep) : { metrics: {} };
      // The weights have changed even if the engine was stopped meanwhile: count the step.
      this.globalStep += 1;
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
      if (this.#rolloutRewards.length > 0) {
        metrics.rollout_reward_mean = this.#rolloutRewards.reduce((sum, reward) => sum + reward, 0) / this.#rolloutRewards.length;
        this.#rolloutRewards = [];
      }
      if (this.#evalRewards.length > 0) {
        metrics.eval_reward_mean = this.#evalRewards.reduce((sum, reward) => sum + reward, 0) / this.#evalRewards.length;
        metrics.eval_episodes = this.#evalRewards.length;
        this.#evalRewards = [];
      }
      this.metrics.push(metrics);
      this.#stepStartedAt = now;
      await this.checkpoints.appendMetrics(metrics).catch((error: unknown) => this.logger.error({ error: String(error) }, "metrics.jsonl append failed"));
      this.logger.info({ step: this.globalStep, reward_mean: metrics.reward_mean, episodes: metrics.episodes }, "step done");
      if (this.state.epoch !== epoch) return;
      const maxSteps = this.config.max_steps;
      const finished = maxSteps > 0 && this.globalStep >= maxSteps;
      if (finished || (this.config.save_freq > 0 && this.globalStep % this.config.save_freq === 0)) {
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
      this.logger.error({ error: String(error), step: this.globalStep }, "training step failed");
      if (this.state.epoch === epoch) this.state.transition("ENGINE.OFFLINE", `engine failed during training: ${errorText(error)}`);
    }
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
