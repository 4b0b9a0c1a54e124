import { describe, expect, it } from "vitest";
import type { PooledEpisode } from "./sample-pool.ts";
import { maxLogMetricNamesPerStep, renderPrometheus, summarizeStep } from "./step-metrics.ts";

function pooled(reward: number, isSuccess: boolean, tokens: [number, number], logMetrics: Record<string, number> = {}): PooledEpisode {
  return {
    episodeUuid: `e${reward}`,
    taskId: "t",
    reward,
    sequence: 1,
    clientUuid: "c",
    isSuccess,
    samples: [],
    stats: { calls: 2, samples: 1, tokensWithoutMerge: tokens[0], tokensWithMerge: tokens[1] },
    logMetrics,
    completedAt: 0,
  };
}

describe("summarizeStep", () => {
  it("reports at most 256 distinct log metric names per step and counts the rest as dropped", () => {
    const flood = (offset: number) => Object.fromEntries(Array.from({ length: 60 }, (_, index) => [`name_${offset + index}`, index]));
    const batch = Array.from({ length: 6 }, (_, index) => pooled(index % 2, false, [10, 10], flood(index * 60)));
    const metrics = summarizeStep({ step: 1, batch, engineMetrics: {}, stepTimeMs: 1, trainTimeMs: 1, now: 0 });
    expect(Object.keys(metrics).filter((name) => name.startsWith("log/"))).toHaveLength(maxLogMetricNamesPerStep);
    expect(metrics.log_metrics_dropped).toBe(6 * 60 - maxLogMetricNamesPerStep);
  });

  it("computes reward mean/std, success rate, merge ratio and averages log metrics", () => {
    const metrics = summarizeStep({
      step: 4,
      batch: [pooled(1, true, [100, 60], { turns: 3 }), pooled(0, false, [100, 40], { turns: 1 })],
      engineMetrics: { loss: 0.5, kl: 0.01, reward_mean: 99 },
      stepTimeMs: 2000,
      trainTimeMs: 500,
      now: 10_000,
    });
    expect(metrics).toMatchObject({
      step: 4,
      time: 10,
      reward_mean: 0.5,
      reward_std: 0.5,
      success_rate: 0.5,
      episodes: 2,
      samples: 2,
      tokens: 100,
      merge_ratio: 0.5,
      step_time_s: 2,
      train_time_s: 0.5,
      loss: 0.5,
      kl: 0.01,
      "log/turns": 2,
    });
  });
});

describe("renderPrometheus", () => {
  it("marks the current state and exposes counters", () => {
    const text = renderPrometheus({
      state: "ENGINE.ROLLING",
      states: ["ENGINE.OFFLINE", "ENGINE.ROLLING"],
      globalStep: 3,
      runningEpisodes: 2,
      poolEpisodes: 5,
      counters: { episodes_claimed: 9 },
      last: undefined,
    });
    expect(text).toContain('swarm_engine_state{state="ENGINE.ROLLING"} 1');
    expect(text).toContain('swarm_engine_state{state="ENGINE.OFFLINE"} 0');
    expect(text).toContain("swarm_global_step 3");
    expect(text).toContain("swarm_episodes_claimed_total 9");
  });
});
