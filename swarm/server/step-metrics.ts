import type { PooledEpisode } from "./sample-pool.ts";

/** One optimizer step as the server reports it (`GET /metrics`, metrics.jsonl). */
export interface StepMetrics {
  step: number;
  /** Unix seconds when the step finished. */
  time: number;
  reward_mean: number;
  reward_std: number;
  success_rate: number;
  episodes: number;
  samples: number;
  tokens: number;
  /** Tokens after timeline merging ÷ tokens if every call were its own sample (≤ 1). */
  merge_ratio: number;
  /** From the end of the previous step (or boot) to the end of this one. */
  step_time_s: number;
  train_time_s: number;
  /** Engine metrics (loss, kl, ...) and client log metrics (prefixed "log/"), averaged. */
  [name: string]: number;
}

/** Pure: the metrics of a batch, given the engine's own numbers. */
/** Distinct `log_metrics` names one step reports (see stepMetrics). */
export const maxLogMetricNamesPerStep = 256;

export function summarizeStep(input: {
  step: number;
  batch: readonly PooledEpisode[];
  engineMetrics: Record<string, number>;
  stepTimeMs: number;
  trainTimeMs: number;
  now: number;
}): StepMetrics {
  const rewards = input.batch.map((episode) => episode.reward);
  const mean = average(rewards);
  const variance = average(rewards.map((reward) => (reward - mean) ** 2));
  const successes = input.batch.filter((episode) => episode.isSuccess === true).length;
  let tokensWithMerge = 0;
  let tokensWithoutMerge = 0;
  let samples = 0;
  for (const episode of input.batch) {
    tokensWithMerge += episode.stats.tokensWithMerge;
    tokensWithoutMerge += episode.stats.tokensWithoutMerge;
    samples += episode.stats.samples;
  }
  // A step reports at most maxLogMetricNamesPerStep distinct client metric names; the rest
  // are dropped and counted (log_metrics_dropped), so clients cannot grow /metrics at will.
  const logMetrics: Record<string, number[]> = {};
  let distinct = 0;
  let dropped = 0;
  for (const episode of input.batch) {
    for (const [name, value] of Object.entries(episode.logMetrics)) {
      const key = `log/${name}`;
      if (logMetrics[key] === undefined) {
        if (distinct >= maxLogMetricNamesPerStep) {
          dropped += 1;
          continue;
        }
        distinct += 1;
        logMetrics[key] = [];
      }
      logMetrics[key].push(value);
    }
  }
  const metrics: StepMetrics = {
    step: input.step,
    time: Math.round(input.now / 1000),
    reward_mean: mean,
    reward_std: Math.sqrt(variance),
    success_rate: input.batch.length === 0 ? 0 : successes / input.batch.length,
    episodes: input.batch.length,
    samples,
    tokens: tokensWithMerge,
    merge_ratio: tokensWithoutMerge === 0 ? 1 : tokensWithMerge / tokensWithoutMerge,
    step_time_s: input.stepTimeMs / 1000,
    train_time_s: input.trainTimeMs / 1000,
  };
  for (const [name, value] of Object.entries(input.engineMetrics)) {
    if (Number.isFinite(value) && !(name in metrics)) metrics[name] = value;
  }
  for (const [name, values] of Object.entries(logMetrics)) metrics[name] = average(values);
  if (dropped > 0) metrics.log_metrics_dropped = dropped;
  return metrics;
}

function average(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Prometheus text exposition of a few gauges and counters (names prefixed `swarm_`). */
export function renderPrometheus(input: {
  state: string;
  states: readonly string[];
  globalStep: number;
  runningEpisodes: number;
  poolEpisodes: number;
  counters: Record<string, number>;
  last: StepMetrics | undefined;
}): string {
  const lines: string[] = [];
  const gauge = (name: string, help: string, value: number, labels = ""): void => {
    lines.push(`# HELP swarm_${name} ${help}`, `# TYPE swarm_${name} gauge`, `swarm_${name}${labels} ${value}`);
  };
  lines.push("# HELP swarm_engine_state 1 for the current engine state", "# TYPE swarm_engine_state gauge");
  for (const state of input.states) lines.push(`swarm_engine_state{state="${state}"} ${state === input.state ? 1 : 0}`);
  gauge("global_step", "optimizer steps done", input.globalStep);
  gauge("running_episodes", "claimed episodes not yet finished", input.runningEpisodes);
  gauge("pool_episodes", "finished train episodes waiting for a batch", input.poolEpisodes);
  for (const [name, value] of Object.entries(input.counters)) {
    const metric = `swarm_${name.replace(/[^a-zA-Z0-9_]/g, "_")}_total`;
    lines.push(`# TYPE ${metric} counter`, `${metric} ${value}`);
  }
  if (input.last) {
    for (const [name, value] of Object.entries(input.last)) {
      if (name === "step" || name === "time") continue;
      const metric = `swarm_last_step_${name.replace(/[^a-zA-Z0-9_]/g, "_")}`;
      lines.push(`# TYPE ${metric} gauge`, `${metric} ${value}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
