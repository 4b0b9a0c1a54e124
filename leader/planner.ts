import type { KnobValue, Topic } from "./topic.ts";
import type { SampleSummary } from "./statistics.ts";

/**
 * The planner port: given the topic and every stage so far with its outcomes, say what
 * the next stage runs, or why the campaign stops. Two implementations share it: the
 * deterministic `heuristic` one (leader/heuristic-planner.ts) and an `llm` one.
 *
 * What the contract leaves out, on purpose:
 * - No I/O. A planner never reads result directories, writes files or launches anything:
 *   the graph reads results into `ExperimentOutcome`s and writes the plan it gets back.
 * - No paths or blueprint text: a plan names configurations as config-key deltas and
 *   blueprint ids; leader/write-blueprints.ts turns them into blueprints.
 * - No memory between calls: everything a planner may use is in `PlannerInput`, so a
 *   resumed leader asking again gets the same answer (the heuristic one is deterministic).
 * - No arithmetic on faith: scores arrive computed (leader/statistics.ts); a planner
 *   compares them, it does not recompute curves.
 * - Budgets are checked by the planner for the stage it proposes; enforcing them again
 *   before dispatch is the graph's job.
 */
export interface Planner {
  readonly name: string;
  next(input: PlannerInput): Promise<PlannerStep>;
}

export interface PlannerInput {
  topic: Topic;
  /** Every finished stage in order, with its plan and the outcome of each experiment. */
  history: StageRecord[];
  /** What the campaign has used so far (the experiment count is taken from `history`). */
  usage: { gpuHours: number; wallTimeMs: number };
}

export type PlannerStep =
  | { kind: "stage"; plan: StagePlan }
  | { kind: "stop"; reason: StopReason; explanation: string; best: ConfigurationSummary | undefined; evidence: Record<string, unknown> };

export type StopReason = "needs-input" | "separated" | "no-improvement" | "exhausted" | "budget" | "stage-failed";

/** One full assignment of the knobs, and its difference from the baseline. */
export interface Configuration {
  /** Safe as part of a blueprint id; "baseline" for the baseline. */
  id: string;
  settings: Record<string, KnobValue>;
  /** The knobs whose value differs from the baseline. */
  delta: Record<string, KnobValue>;
}

/**
 * A falsifiable statement about a configuration's score (the topic's metric, aggregated as
 * `metric.score`) across its seeds:
 * - `beats-configuration`: its mean is better than `configurationId`'s mean;
 * - `above-level`: its mean is better than the fixed `level` (a reference such as chance);
 * - `records`: its runs record finite values of the metric (a baseline without reference).
 */
export interface Prediction {
  kind: "beats-configuration" | "above-level" | "records";
  text: string;
  configurationId?: string;
  level?: number;
}

export interface PlannedConfiguration extends Configuration {
  hypothesis: string;
  prediction: Prediction;
  /** Why this configuration is in the stage, in one sentence. */
  purpose: string;
}

export interface PlannedExperiment {
  blueprintId: string;
  configurationId: string;
  seed: number;
}

export interface StagePlan {
  stage: number;
  kind: "screen" | "refine";
  rationale: string;
  hypotheses: { id: string; statement: string }[];
  configurations: PlannedConfiguration[];
  experiments: PlannedExperiment[];
  /** What each possible outcome of the stage leads to, decided before it runs. */
  decisions: { outcome: string; decision: string }[];
}

export interface ExperimentOutcome {
  blueprintId: string;
  configurationId: string;
  seed: number;
  state: "succeeded" | "failed" | "timed_out" | "cancelled" | "missing";
  /** The topic's score of the run; undefined when it recorded no finite value. */
  score: number | undefined;
  reason?: string;
}

export interface StageRecord {
  plan: StagePlan;
  outcomes: ExperimentOutcome[];
}

export interface ConfigurationSummary {
  configuration: Configuration;
  /** Scores of the runs that recorded one, in seed order. */
  scores: number[];
  sample: SampleSummary;
  failed: number;
  /** The stage that first measured it. */
  stage: number;
}
