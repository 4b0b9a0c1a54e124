import { fenceUntrusted } from "../../../llm/untrusted-text.ts";
import { bestConfiguration, formatNumber, summarizeConfigurations } from "../../domain/configurations.ts";
import type { ConfigurationSummary, PlannerInput, StageRecord } from "../../domain/planner.ts";
import { separatedBeyondNoise } from "../../domain/statistics.ts";
import type { KnobValue, Topic } from "../../domain/topic.ts";

/**
 * Grounding: every number the model sees is computed here from the stage records and the
 * configuration summaries (leader/domain/statistics.ts, leader/domain/configurations.ts), as one
 * compact JSON block. The model interprets; it never computes a mean, an interval or a
 * comparison itself, and the report's numbers are these, not the model's.
 *
 * Free text from outside (failure reasons, read from result directories) is not in the
 * JSON: it goes in a separate fence (`reasonsBlock`), so it stays data.
 */
export interface Figures {
  metric: { name: string; goal: string; score: string; reference: number | null } | null;
  seeds: number;
  knobs: Record<string, KnobValue[]>;
  budgets: {
    stages: { limit: number; used: number };
    experiments: { limit: number; used: number };
    gpuHours: { limit: number | null; used: number | null };
    wallTimeMinutes: { limit: number | null; used: number | null };
  };
  stages: {
    stage: number;
    kind: string;
    configurations: {
      id: string;
      delta: Record<string, KnobValue>;
      hypothesis: string;
      prediction: { kind: string; against: string | null; level: number | null };
    }[];
    outcomes: { experiment: string; configuration: string; seed: number; state: string; score: number | null; reason: boolean }[];
  }[];
  /** Every configuration measured so far, merged across stages, with its comparison to the best. */
  configurations: {
    id: string;
    delta: Record<string, KnobValue>;
    stage: number;
    n: number;
    mean: number | null;
    low: number | null;
    high: number | null;
    failed: number;
    scores: number[];
    versusBest: "is-best" | "worse-beyond-noise" | "within-noise" | "undecidable (fewer than 2 seeds)" | "no score";
  }[];
  best: string | null;
}

/** `usage` absent (in the report): the GPU-hours and wall time used are shown as null. */
export function figuresOf(topic: Topic, history: StageRecord[], knobs: Record<string, KnobValue[]>, usage?: PlannerInput["usage"]): Figures {
  const summaries = summarizeConfigurations(history);
  const goal = topic.metric?.goal ?? "maximize";
  const best = bestConfiguration(summaries, goal);
  return {
    metric: topic.metric ? { name: topic.metric.name, goal: topic.metric.goal, score: topic.metric.score, reference: topic.metric.reference ?? null } : null,
    seeds: topic.seeds,
    knobs,
    budgets: {
      stages: { limit: topic.budgets.stages, used: history.length },
      experiments: { limit: topic.budgets.experiments, used: history.reduce((sum, record) => sum + record.plan.experiments.length, 0) },
      gpuHours: { limit: topic.budgets.gpuHours ?? null, used: usage ? (rounded(usage.gpuHours) ?? 0) : null },
      wallTimeMinutes: {
        limit: topic.budgets.wallTimeMs === undefined ? null : rounded(topic.budgets.wallTimeMs / 60_000),
        used: usage ? (rounded(usage.wallTimeMs / 60_000) ?? 0) : null,
      },
    },
    stages: history.map((record) => ({
      stage: record.plan.stage,
      kind: record.plan.kind,
      configurations: record.plan.configurations.map((configuration) => ({
        id: configuration.id,
        delta: configuration.delta,
        hypothesis: configuration.hypothesis,
        prediction: {
          kind: configuration.prediction.kind,
          against: configuration.prediction.configurationId ?? null,
          level: rounded(configuration.prediction.level),
        },
      })),
      outcomes: record.outcomes.map((outcome) => ({
        experiment: outcome.blueprintId,
        configuration: outcome.configurationId,
        seed: outcome.seed,
        state: outcome.state,
        score: rounded(outcome.score),
        reason: outcome.reason !== undefined && outcome.reason !== "",
      })),
    })),
    configurations: summaries.map((summary) => ({
      id: summary.configuration.id,
      delta: summary.configuration.delta,
      stage: summary.stage,
      n: summary.sample.n,
      mean: summary.sample.n > 0 ? rounded(summary.sample.mean) : null,
      low: rounded(summary.sample.low),
      high: rounded(summary.sample.high),
      failed: summary.failed,
      scores: summary.scores.map((score) => rounded(score) ?? Number.NaN),
      versusBest: versusBest(summary, best, goal),
    })),
    best: best?.configuration.id ?? null,
  };
}

function versusBest(
  summary: ConfigurationSummary,
  best: ConfigurationSummary | undefined,
  goal: "maximize" | "minimize",
): Figures["configurations"][number]["versusBest"] {
  if (summary.sample.n === 0) return "no score";
  if (best === undefined || best.configuration.id === summary.configuration.id) return "is-best";
  const separated = separatedBeyondNoise(best.sample, summary.sample, goal);
  if (separated === undefined) return "undecidable (fewer than 2 seeds)";
  return separated ? "worse-beyond-noise" : "within-noise";
}

/** The figures as the model reads them: a JSON block, one line, computed by a3r. */
/** `figures` may be a compacted copy (prompts.ts, trim level 2). */
export function figuresBlock(figures: Figures | object): string {
  return ["Figures computed by a3r (JSON; use these numbers, do not recompute them):", "```json", JSON.stringify(figures), "```"].join("\n");
}

/** Failure reasons of the runs, fenced as untrusted data (they come from result directories and logs). */
export function reasonsBlock(history: StageRecord[]): string | undefined {
  const lines = history.flatMap((record) =>
    record.outcomes.filter((outcome) => outcome.reason).map((outcome) => `${outcome.blueprintId} (${outcome.state}): ${outcome.reason}`),
  );
  if (lines.length === 0) return undefined;
  return `Reasons recorded for runs (outcomes with "reason": true above), one per line:\n${fenceUntrusted("run reasons from result directories", lines.join("\n"))}`;
}

/** Four significant digits, as in plans and reports; null for a missing or non-finite number. */
function rounded(value: number | undefined): number | null {
  if (value === undefined || !Number.isFinite(value)) return null;
  return Number(formatNumber(value));
}
