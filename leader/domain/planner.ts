import type { KnobValue, Topic } from "./topic.ts";
import type { KnobBound } from "./knob-bounds.ts";
import type { SampleSummary } from "./statistics.ts";

/**
 * The planner port: given the topic and every stage so far with its outcomes, say what
 * the next stage runs, or why the campaign stops. Two implementations share it: the
 * deterministic `heuristic` one (leader/planners/heuristic/heuristic-planner.ts) and an `llm` one.
 *
 * What the contract leaves out, on purpose:
 * - No I/O. A planner never reads result directories, writes files or launches anything:
 *   the graph reads results into `ExperimentOutcome`s and writes the plan it gets back.
 * - No paths or blueprint text: a plan names configurations as config-key deltas and
 *   blueprint ids; leader/design/write-blueprints.ts turns them into blueprints.
 * - No memory between calls: everything a planner may use is in `PlannerInput`, so a
 *   resumed leader asking again gets the same answer (the heuristic one is deterministic).
 * - No arithmetic on faith: scores arrive computed (leader/domain/statistics.ts); a planner
 *   compares them, it does not recompute curves.
 * - Budgets are checked by the planner for the stage it proposes; enforcing them again
 *   before dispatch is the graph's job.
 */
export interface Planner {
  readonly name: string;
  /**
   * Optional, once before the first stage: the topic as a question with variables and
   * controls. The graph keeps the answer in its state and in `framing.md`.
   */
  frame?(topic: Topic): Promise<FramedQuestion>;
  next(input: PlannerInput): Promise<PlannerStep>;
  /**
   * Optional: rewrites the blueprints the graph rendered from the topic's base (one per
   * experiment of the stage). The graph audits the answer; with errors it asks once more
   * with the findings, then stops the stage with them.
   */
  writeBlueprints?(input: BlueprintWritingInput): Promise<BlueprintText[]>;
  /**
   * Optional, in the report: interprets the computed figures. Numbers in the report always
   * come from the analysis; a claim citing an experiment id that does not exist is flagged.
   */
  conclude?(input: ConclusionInput): Promise<Conclusion>;
}

export interface PlannerInput {
  topic: Topic;
  /** Every finished stage in order, with its plan and the outcome of each experiment. */
  history: StageRecord[];
  /** What the campaign has used so far (the experiment count is taken from `history`). */
  usage: { gpuHours: number; wallTimeMs: number };
  /** The planner's own framing of the topic, when it has `frame`. */
  framing?: FramedQuestion;
  /** What reviewers asked with `a3r resume --instruct`, oldest first. */
  instructions?: ReviewInstruction[];
  /** Per knob, the bounds of the engine's config schema (leader/design/engine-schema.ts); refinement stays inside. */
  engineBounds?: Record<string, KnobBound>;
}

export interface FramedQuestion {
  question: string;
  variables: { name: string; values: KnobValue[]; why: string }[];
  controls: string[];
  metric: { name: string; goal: "maximize" | "minimize" };
  /** What result would answer the question. */
  answeredWhen: string;
}

export interface ReviewInstruction {
  /** Stage the reviewer was looking at (the plan or the blueprints of that stage). */
  stage: number;
  at: "plan" | "blueprints";
  text: string;
  time: string;
}

/** A blueprint as markdown text, keyed by its id (the file is `<blueprintId>.md`). */
export interface BlueprintText {
  blueprintId: string;
  text: string;
}

export interface BlueprintWritingInput {
  topic: Topic;
  plan: StagePlan;
  /** The graph's rendering of each experiment from the topic's base. */
  drafts: BlueprintText[];
  /** Audit errors in the previous answer (the one repair round); absent on the first ask. */
  findings?: { blueprintId: string; line: number; message: string }[];
  /** What reviewers asked with `a3r resume --instruct`, oldest first. */
  instructions?: ReviewInstruction[];
}

export interface ConclusionInput {
  topic: Topic;
  framing?: FramedQuestion;
  history: StageRecord[];
  stop: { reason: string; explanation: string } | null;
  /** The computed summary of each configuration (means and intervals), best first. */
  summaries: ConfigurationSummary[];
}

export interface Conclusion {
  /** The answer to the question, in words. */
  answer: string;
  /** Each claim cites the experiment ids (blueprint ids) it rests on. */
  claims: { text: string; experimentIds: string[] }[];
  caveats: string[];
}

export type PlannerStep =
  | { kind: "stage"; plan: StagePlan }
  | { kind: "stop"; reason: StopReason; explanation: string; best: ConfigurationSummary | undefined; evidence: Record<string, unknown> };

/**
 * Why a campaign stops. `separated`: the best is better than every other beyond seed noise;
 * `equivalent`: the rest are worse or the same as the best within the topic's margin (a
 * tie is an answer); `budget`: a budget ran out with comparisons still open.
 */
export type StopReason = "needs-input" | "separated" | "equivalent" | "no-improvement" | "exhausted" | "budget" | "stage-failed";

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
  /** Set when a knob's value lies outside the range the campaign has tried: what it extrapolates. */
  extrapolation?: string;
}

export interface PlannedExperiment {
  blueprintId: string;
  configurationId: string;
  seed: number;
}

export interface StagePlan {
  stage: number;
  /** screen: one factor at a time; refine: new values around the best; replicate: more seeds of the contenders. */
  kind: "screen" | "refine" | "replicate";
  /** refine: the configuration the stage refines around (so it is refined around once). */
  around?: string;
  rationale: string;
  hypotheses: { id: string; statement: string }[];
  configurations: PlannedConfiguration[];
  experiments: PlannedExperiment[];
  /** What each possible outcome of the stage leads to, decided before it runs. */
  decisions: { outcome: string; decision: string }[];
  /** Configurations the planner proposed that the engine's schema refuses: dropped, with the reasons (design/refuse-configurations.ts). */
  refused?: RefusedConfiguration[];
}

export interface RefusedConfiguration {
  configurationId: string;
  settings: Record<string, KnobValue>;
  /** The engine's reasons, one per failing field. */
  reasons: string[];
}

export interface ExperimentOutcome {
  blueprintId: string;
  configurationId: string;
  seed: number;
  /** stopped_early: cut by the topic's early stopping at a rung; its partial scores are not compared. */
  state: "succeeded" | "failed" | "timed_out" | "cancelled" | "stopped_early" | "missing";
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
