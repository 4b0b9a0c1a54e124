import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OptimizerConfig } from "../../swarm/engines/port/engine-config.ts";
import type { TrainingSample } from "../../swarm/engines/port/engine.ts";
import { EmbeddedEngine } from "../../swarm/engines/embedded/embedded-engine.ts";
import { buildTrainingSamples, type RecordedCall } from "../../swarm/tracking/index.ts";
import type { AskPolicy, SwarmTask, TaskInstance } from "./task-types.ts";

/**
 * The swarm's training loop without HTTP: episodes are played by the task's own
 * `playEpisode` against the embedded engine, recorded, merged into samples by
 * swarm/tracking, batched by a strategy and trained with GRPO. The learning test and the
 * learning bench use it to show what lr, group size, KL and batching do to the curve.
 *
 * Batching strategies (as the swarm server names them):
 * - `episodes` (C1): the first `batchSize` groups of `numRepeat` episodes, whatever their rewards.
 * - `non-dummy-tasks` (C3): keep sampling groups, and batch only groups whose rewards are not
 *   all equal, until there are `batchSize` of them (at most `maxGroupsPerStep` sampled).
 */
export type BatchingStrategy = "episodes" | "non-dummy-tasks";

export interface InProcessTrainingOptions {
  task: SwarmTask<TaskInstance>;
  steps: number;
  batchSize: number;
  numRepeat: number;
  strategy: BatchingStrategy;
  optimizer: OptimizerConfig;
  seed: number;
  temperature?: number;
  /** Nucleus sampling of the training rollouts (default 1: none). */
  topP?: number;
  /**
   * A fixed-protocol evaluation, as the swarm server's `eval_protocol`: after every `every`
   * steps, `episodes` eval episodes, one task each from a set fixed by the run's seed, at
   * one fixed sampling, never trained on.
   */
  protocolEval?: { every: number; episodes: number; temperature: number; topP: number };
  maxGroupsPerStep?: number;
  /** Stop early once the mean reward of the last `window` steps reaches this. */
  stopAtReward?: number;
  window?: number;
}

export interface InProcessTrainingResult {
  /** Mean reward of every episode played at each step (before that step's update). */
  rewardCurve: number[];
  /** First step (1-based) at which the trailing-window mean reached `stopAtReward`. */
  stepsToTarget?: number;
  episodes: number;
  /** Episodes played up to and including each step (what a run cut after that step consumed). */
  episodesByStep: number[];
  wallMs: number;
  tokensWithoutMerge: number;
  tokensWithMerge: number;
  lastMetrics: Record<string, number>;
  /** Share of sampled groups whose rewards were all equal (no GRPO signal). */
  allEqualGroupFraction: number;
  /** Mean of each task log metric over the episodes of the last step. */
  lastLogMetrics: Record<string, number>;
  /** The fixed-protocol evaluation's mean reward after each evaluated step (with `protocolEval`). */
  protocolCurve: { step: number; value: number }[];
  /** Eval episodes the evaluations played (compute they cost beside `episodes`). */
  protocolEpisodes: number;
}

/** The embedded policy's tuned defaults (see bench/learning.bench.ts for what other values do). */
export const defaultOptimizer: OptimizerConfig = { lr: 0.2, kl_coef: 0.001, clip: 0.2 };

export function trailingMean(values: readonly number[], window: number): number {
  const tail = values.slice(-window);
  return tail.length ? tail.reduce((sum, value) => sum + value, 0) / tail.length : 0;
}

/** First step (1-based) at which the trailing-window mean of the curve reaches `target`. */
export function stepsToReach(curve: readonly number[], target: number, window: number): number | undefined {
  for (let step = window; step <= curve.length; step++) {
    if (trailingMean(curve.slice(0, step), window) >= target) return step;
  }
  return undefined;
}

/** The current weights on the protocol's tasks (the same ones at every evaluation of a seed), each call seeded by its place. */
async function evaluateOnProtocol(
  engine: EmbeddedEngine,
  task: SwarmTask<TaskInstance>,
  seed: number,
  protocol: NonNullable<InProcessTrainingOptions["protocolEval"]>,
): Promise<number> {
  let sum = 0;
  for (let index = 0; index < protocol.episodes; index++) {
    let call = 0;
    const ask: AskPolicy = async (messages, askOptions) =>
      (
        await engine.generate({
          messages,
          temperature: protocol.temperature,
          topP: protocol.topP,
          maxTokens: askOptions.maxTokens ?? 8,
          seed: (seed * 1_000_003 + index * 131 + call++) % 2 ** 31,
        })
      ).text;
    sum += (await task.playEpisode(task.sampleTask(seed * 7_368_787 + 0xe7a1 + index), ask)).reward;
  }
  return sum / protocol.episodes;
}

export async function trainInProcess(options: InProcessTrainingOptions): Promise<InProcessTrainingResult> {
  const started = performance.now();
  const experimentDir = await mkdtemp(join(tmpdir(), "a3r-in-process-"));
  const engine = new EmbeddedEngine({
    kind: "embedded",
    seed: options.seed,
    optimizer: options.optimizer,
    experiment_dir: experimentDir,
    embedded: { train_off_thread: true },
  });
  const window = options.window ?? 10;
  const maxGroups = options.maxGroupsPerStep ?? options.batchSize * 8;
  const rewardCurve: number[] = [];
  const episodesByStep: number[] = [];
  let stepsToTarget: number | undefined;
  let groupsSampled = 0,
    groupsAllEqual = 0;
  let episodes = 0,
    tokensWithoutMerge = 0,
    tokensWithMerge = 0,
    episodeCounter = 0,
    taskCounter = 0;
  let lastMetrics: Record<string, number> = {};
  let lastLogMetrics: Record<string, number> = {};
  const protocolCurve: { step: number; value: number }[] = [];
  let protocolEpisodes = 0;
  try {
    await engine.load();
    for (let step = 1; step <= options.steps; step++) {
      const batch: TrainingSample[] = [];
      const stepRewards: number[] = [];
      const logMetricSums: Record<string, number> = {};
      let groupsInBatch = 0;
      for (let group = 0; group < maxGroups && groupsInBatch < options.batchSize; group++) {
        const task = options.task.sampleTask(options.seed * 1_000_003 + taskCounter++);
        const groupSamples: TrainingSample[] = [];
        const groupRewards: number[] = [];
        for (let repeat = 0; repeat < options.numRepeat; repeat++) {
          const episodeUuid = `episode-${episodeCounter++}`;
          const calls: RecordedCall[] = [];
          const ask: AskPolicy = async (messages, askOptions) => {
            const result = await engine.generate({
              messages,
              temperature: options.temperature ?? 1,
              ...(options.topP === undefined ? {} : { topP: options.topP }),
              maxTokens: askOptions.maxTokens ?? 8,
            });
            calls.push({
              callIndex: calls.length,
              messages,
              promptTokenIds: result.promptTokenIds,
              completionTokenIds: result.completionTokenIds,
              completionText: result.text,
              ...(result.completionLogprobs ? { completionLogprobs: result.completionLogprobs } : {}),
              time: Date.now(),
            });
            return result.text;
          };
          const outcome = await options.task.playEpisode(task, ask);
          const built = buildTrainingSamples(calls, {
            compareLevel: "text",
            taskId: task.taskId,
            episodeUuid,
            reward: outcome.reward,
            encodeChat: (messages, encodeOptions) => engine.encodeChat(messages, encodeOptions),
          });
          tokensWithoutMerge += built.stats.tokensWithoutMerge;
          tokensWithMerge += built.stats.tokensWithMerge;
          groupSamples.push(...built.samples);
          groupRewards.push(outcome.reward);
          for (const [name, value] of Object.entries(outcome.logMetrics ?? {})) logMetricSums[name] = (logMetricSums[name] ?? 0) + value;
          episodes++;
        }
        stepRewards.push(...groupRewards);
        const allEqual = groupRewards.every((reward) => reward === groupRewards[0]);
        groupsSampled++;
        if (allEqual) groupsAllEqual++;
        if (options.strategy === "episodes" || !allEqual) {
          batch.push(...groupSamples);
          groupsInBatch++;
        }
      }
      lastLogMetrics = Object.fromEntries(Object.entries(logMetricSums).map(([name, sum]) => [name, sum / stepRewards.length]));
      rewardCurve.push(stepRewards.reduce((sum, value) => sum + value, 0) / stepRewards.length);
      episodesByStep.push(episodes);
      if (batch.length > 0) lastMetrics = (await engine.train(batch, step)).metrics;
      if (options.protocolEval && step % options.protocolEval.every === 0) {
        protocolCurve.push({ step, value: await evaluateOnProtocol(engine, options.task, options.seed, options.protocolEval) });
        protocolEpisodes += options.protocolEval.episodes;
      }
      if (options.stopAtReward !== undefined && rewardCurve.length >= window && trailingMean(rewardCurve, window) >= options.stopAtReward) {
        stepsToTarget = step;
        break;
      }
    }
  } finally {
    await engine.close();
    await rm(experimentDir, { recursive: true, force: true });
  }
  return {
    rewardCurve,
    ...(stepsToTarget !== undefined ? { stepsToTarget } : {}),
    episodes,
    episodesByStep,
    wallMs: performance.now() - started,
    tokensWithoutMerge,
    tokensWithMerge,
    lastMetrics,
    allEqualGroupFraction: groupsSampled ? groupsAllEqual / groupsSampled : 0,
    lastLogMetrics,
    protocolCurve,
    protocolEpisodes,
  };
}
