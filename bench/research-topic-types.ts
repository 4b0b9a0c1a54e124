import type { EarlyStopRule } from "../leader/domain/early-stop.ts";
import { summarizeCurve } from "../leader/domain/statistics.ts";

/**
 * A known-answer topic of the research bench (bench/research.bench.ts), in its own module so
 * topic files (bench/research-measurement-topics.ts) can import the shape without importing
 * the bench.
 */
export interface KnownAnswerTopic {
  name: string;
  question: string;
  knob: string;
  /** The first is the baseline. */
  values: string[];
  goal: "maximize" | "minimize";
  range: [number, number];
  equivalence: number;
  /** Successive halving, as the topic's `early_stop` (the bench applies it where the leader does). */
  earlyStop?: EarlyStopRule;
  /**
   * Why the knob changes how the training metric is measured (a sampling temperature, top_p):
   * such a topic's truth is the fixed-protocol score (`RunResult.protocol`), and its campaign
   * is judged twice, on that score ("protocol on") and on the training score ("protocol off").
   */
  measurement?: string;
  /** Added after the planner was last tuned, and reported apart: its result was not looked at before. */
  fresh?: boolean;
  /** One run: its score and the rollout episodes it consumed (and its curve, for early stopping). */
  run(value: string, seed: number): Promise<RunResult>;
}

export interface RunResult {
  score: number;
  episodes: number;
  /** The per-step reward and the episodes played up to each step; maxSteps as planned. */
  curve?: { rewards: number[]; episodesByStep: number[]; maxSteps: number };
  /**
   * The run scored by a fixed protocol (eval episodes at a fixed sampling, no training on
   * them): its score, the eval episodes it cost, and its eval curve at the eval steps.
   */
  protocol?: { score: number; episodes: number; points: { step: number; value: number }[]; maxSteps: number };
}

/** A run's score as the leader's `score: area` reads it: the mean over the curve's span. */
export function curveArea(points: readonly { step: number; value: number }[]): number {
  return summarizeCurve([...points], "maximize").normalizedArea!;
}
