import { createHash } from "node:crypto";
import { blueprintIdMaxLength, blueprintIdPattern } from "../../blueprints/index.ts";
import type { Configuration, ConfigurationSummary, StageRecord } from "./planner.ts";
import { separatedBeyondNoise, summarizeSample } from "./statistics.ts";
import type { KnobValue } from "./topic.ts";

/**
 * Configurations as values: their ids, their summaries across seeds and stages, and the
 * comparisons the planner and the analysis both use, so both call "best" the same thing.
 * Pure and deterministic.
 */
export type Goal = "maximize" | "minimize";

export function baselineSettings(knobs: Record<string, KnobValue[]>): Record<string, KnobValue> {
  return Object.fromEntries(Object.entries(knobs).map(([name, values]) => [name, values[0]!]));
}

/** A configuration from full settings; the id names the delta against the baseline. */
export function makeConfiguration(settings: Record<string, KnobValue>, baseline: Record<string, KnobValue>): Configuration {
  const delta: Record<string, KnobValue> = {};
  for (const [name, value] of Object.entries(settings)) if (baseline[name] !== value) delta[name] = value;
  return { id: configurationId(delta), settings: { ...settings }, delta };
}

/** Room left in a blueprint id for the stage prefix and the seed suffix. */
const maxConfigurationIdLength = blueprintIdMaxLength - "s99--seed99".length;

/**
 * "baseline", or the delta as `lr-0.05_batch-16`. When the readable form is not safe as
 * it stands (characters outside the id pattern, or too long) it is cleaned and suffixed
 * with a short hash of the exact delta, so two deltas never share an id.
 */
export function configurationId(delta: Record<string, KnobValue>): string {
  const entries = Object.entries(delta);
  if (entries.length === 0) return "baseline";
  const readable = entries.map(([name, value]) => `${name}-${String(value)}`).join("_");
  if (readable.length <= maxConfigurationIdLength && blueprintIdPattern.test(readable) && readable !== "baseline") return readable;
  const hash = createHash("sha256").update(JSON.stringify(entries)).digest("hex").slice(0, 8);
  const cleaned = readable
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "");
  return `${cleaned.slice(0, maxConfigurationIdLength - hash.length - 1)}-${hash}`.replace(/^-/, "c-");
}

export function blueprintIdOf(stage: number, configuration: string, seed: number): string {
  return `s${stage}-${configuration}-seed${seed}`;
}

export function sameSettings(left: Record<string, KnobValue>, right: Record<string, KnobValue>): boolean {
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  for (const key of keys) if (left[key] !== right[key]) return false;
  return true;
}

/** Every configuration measured so far, merged across stages by id, in first-seen order. */
export function summarizeConfigurations(history: StageRecord[]): ConfigurationSummary[] {
  const byId = new Map<string, { configuration: Configuration; scores: { seed: number; score: number }[]; failed: number; stage: number }>();
  for (const record of history) {
    for (const configuration of record.plan.configurations) {
      if (!byId.has(configuration.id))
        byId.set(configuration.id, {
          configuration: { id: configuration.id, settings: configuration.settings, delta: configuration.delta },
          scores: [],
          failed: 0,
          stage: record.plan.stage,
        });
    }
    for (const outcome of record.outcomes) {
      const entry = byId.get(outcome.configurationId);
      if (!entry) continue;
      if (outcome.state === "succeeded" && outcome.score !== undefined && Number.isFinite(outcome.score))
        entry.scores.push({ seed: outcome.seed, score: outcome.score });
      // A run cut by early stopping did not fail: it is left out of the comparison, and listed apart.
      else if (outcome.state !== "stopped_early") entry.failed += 1;
    }
  }
  return [...byId.values()].map((entry) => {
    const scores = entry.scores.sort((left, right) => left.seed - right.seed).map((item) => item.score);
    return { configuration: entry.configuration, scores, sample: summarizeSample(scores), failed: entry.failed, stage: entry.stage };
  });
}

/** Each configuration's scores by seed (the runs that recorded one): what a paired comparison matches on. */
export type SeedScores = ReadonlyMap<string, ReadonlyMap<number, number>>;

export function seedScores(history: readonly StageRecord[]): SeedScores {
  const byId = new Map<string, Map<number, number>>();
  for (const record of history)
    for (const outcome of record.outcomes) {
      if (outcome.state !== "succeeded" || outcome.score === undefined || !Number.isFinite(outcome.score)) continue;
      if (!byId.has(outcome.configurationId)) byId.set(outcome.configurationId, new Map());
      byId.get(outcome.configurationId)!.set(outcome.seed, outcome.score);
    }
  return byId;
}

/** Whether mean `a` is better than mean `b` for the goal (strictly). */
export function isBetter(a: number, b: number, goal: Goal): boolean {
  return goal === "maximize" ? a > b : a < b;
}

/** The measured configuration with the best mean; ties go to the one measured first. */
export function bestConfiguration(summaries: ConfigurationSummary[], goal: Goal): ConfigurationSummary | undefined {
  let best: ConfigurationSummary | undefined;
  for (const summary of summaries) {
    if (summary.sample.n === 0) continue;
    if (best === undefined || isBetter(summary.sample.mean, best.sample.mean, goal)) best = summary;
  }
  return best;
}

/**
 * Whether `best` is better than every other measured configuration beyond seed noise.
 * False when there is no other, or when any comparison is undecidable (fewer than two
 * seeds on either side): separation is a claim that needs the evidence.
 */
export function separatedFromRest(best: ConfigurationSummary, summaries: ConfigurationSummary[], goal: Goal): boolean {
  const others = summaries.filter((summary) => summary.configuration.id !== best.configuration.id && summary.sample.n > 0);
  if (others.length === 0) return false;
  return others.every((other) => separatedBeyondNoise(best.sample, other.sample, goal) === true);
}

/** A number shown in plans and analyses: four significant digits, no float noise. */
export function formatNumber(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return "n/a";
  if (value !== 0 && (Math.abs(value) >= 1e5 || Math.abs(value) < 1e-3)) return value.toExponential(3);
  return String(Number(value.toPrecision(4)));
}

/** Every configuration's summary, best mean first (configurations without a score last). */
export function rankedSummaries(history: StageRecord[], goal: Goal): ConfigurationSummary[] {
  const summaries = summarizeConfigurations(history);
  const scored = summaries.filter((summary) => summary.scores.length > 0);
  const unscored = summaries.filter((summary) => summary.scores.length === 0);
  return [...scored.sort((a, b) => (isBetter(a.sample.mean, b.sample.mean, goal) ? -1 : isBetter(b.sample.mean, a.sample.mean, goal) ? 1 : 0)), ...unscored];
}
