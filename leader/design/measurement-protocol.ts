import type { z } from "zod";
import { type ConfigObject, isConfigObject, overridePath, schemaLeaves } from "../../blueprints/index.ts";
import { rungStep } from "../domain/early-stop.ts";
import type { MeasurementProtocol, Topic } from "../domain/topic.ts";
import { type EngineSchemas, engineSchemaFor } from "./engine-schema.ts";

/**
 * One measurement protocol for every configuration. A knob that changes how the topic's
 * metric is sampled (the engine schema marks such fields `measures`: temperature, top_p,
 * max_tokens) makes the training reward a different measurement per configuration: a run
 * at temperature 0.3 scores its own greedier samples. For such topics in swarm mode the
 * campaign compares on the swarm server's fixed-protocol evaluation instead
 * (swarm.yaml `eval_protocol`): the base configuration's sampling, a task set fixed by the
 * run's seed, never trained on, after planned steps (the early-stopping rungs, quarters of
 * the run, its end). Other knobs keep the training metric.
 *
 * The leader may not import swarm/ (ARCHITECTURE.md): the schema comes from the caller,
 * and the server's field and metric names are its protocol (swarm/PROTOCOL.md).
 */
export const protocolMetric = "protocol_eval_reward_mean";
/** Training metrics the protocol stands in for: the swarm server's rewards of train episodes. */
const trainingRewardMetrics = new Set(["rollout_reward_mean", "reward_mean"]);
const defaultEpisodes = 64;
/** Knob names that sample differently wherever they land (used only where no engine schema can be asked). */
const samplingKnobNames = /(^|\.)(temperature|top_p|top_k|min_p|repetition_penalty|presence_penalty|frequency_penalty)$/;

export type MeasurementDecision = { protocol: MeasurementProtocol; caveat?: undefined } | { protocol?: undefined; caveat?: string };

/** Per knob, the engine schema's reason it changes how the metric is measured; empty when none does. */
export function measurementKnobs(engine: { schema: z.ZodType; config: ConfigObject }, knobs: readonly string[]): MeasurementProtocol["knobs"] {
  const leaves = schemaLeaves(engine.schema);
  return knobs.flatMap((knob) => {
    const field = overridePath(knob, engine.config, engine.schema);
    const leaf = leaves.get(field) as unknown as z.ZodType | undefined;
    const why = (leaf?.meta?.() as { measures?: unknown } | undefined)?.measures;
    return typeof why === "string" ? [{ knob, field, why }] : [];
  });
}

/** Whether (and how) the topic's runs are compared on a fixed protocol; `caveat` when they should be and cannot. */
export function decideMeasurement(topic: Topic, engine: { schema: z.ZodType; config: ConfigObject } | undefined): MeasurementDecision {
  if (!topic.metric) return {};
  if (!engine || !topic.base) {
    // No engine schema to ask (a classic run, a config only a remote host has): go by the knob's name.
    const named = Object.keys(topic.knobs).filter((knob) => samplingKnobNames.test(knob));
    return named.length === 0
      ? {}
      : {
          caveat: `${named.join(", ")} (by ${named.length === 1 ? "its name" : "their names"}) change how ${topic.metric.name} is sampled, and no engine schema here plans a fixed protocol for this base`,
        };
  }
  const knobs = measurementKnobs(engine, Object.keys(topic.knobs));
  if (knobs.length === 0) return {};
  const named = knobs.map((item) => item.knob).join(", ");
  if (topic.metric.protocol === "training")
    return { caveat: `metric.protocol: training keeps ${topic.metric.name} although ${named} change how it is sampled` };
  if (topic.base.mode !== "swarm" || !trainingRewardMetrics.has(topic.metric.name))
    return {
      caveat: `${named} change how ${topic.metric.name} is sampled, and a fixed-protocol evaluation exists only for a swarm run's reward (${[...trainingRewardMetrics].join(", ")})`,
    };
  const maxSteps = Number(overrideValue(topic, engine, "max_steps") ?? engine.config.max_steps ?? 0);
  if (!Number.isInteger(maxSteps) || maxSteps <= 0)
    return { caveat: `${named} change how ${topic.metric.name} is sampled, and without max_steps in the base there are no planned steps to evaluate at` };
  // The base may set the protocol's interval and size itself; the sampling is always the base's.
  const givenEvery = overrideValue(topic, engine, "eval_protocol.every");
  const givenEpisodes = overrideValue(topic, engine, "eval_protocol.episodes");
  const every = typeof givenEvery === "number" && givenEvery > 0 ? givenEvery : evaluationSteps(topic, maxSteps).reduce(gcd);
  return {
    protocol: {
      trainingMetric: topic.metric.name,
      metric: protocolMetric,
      knobs,
      every,
      atSteps: Array.from({ length: Math.floor(maxSteps / every) }, (_, index) => (index + 1) * every),
      episodes: typeof givenEpisodes === "number" ? givenEpisodes : defaultEpisodes,
      sampling: baseSampling(topic, engine),
    },
  };
}

/**
 * The topic as the campaign compares it: with a protocol, the metric is the protocol's and
 * every run's overrides plan the evaluation (the base's own `eval_protocol` fields win).
 */
export function withMeasurement(topic: Topic, decision: MeasurementDecision): Topic {
  const protocol = decision.protocol;
  if (!protocol || !topic.metric || !topic.base) return decision.caveat ? { ...topic, measurementCaveat: decision.caveat } : topic;
  return {
    ...topic,
    metric: { ...topic.metric, name: protocol.metric },
    base: {
      ...topic.base,
      // Scalars under dotted keys, as every override is (blueprints/overrides).
      overrides: {
        ...topic.base.overrides,
        "eval_protocol.every": protocol.every,
        "eval_protocol.episodes": protocol.episodes,
        "eval_protocol.sampling.temperature": protocol.sampling.temperature,
        "eval_protocol.sampling.top_p": protocol.sampling.top_p,
        "eval_protocol.sampling.max_tokens": protocol.sampling.max_tokens,
      },
    },
    measurement: protocol,
  };
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** The steps an evaluation must cover: the early-stopping rungs (a run is judged there on the same protocol), the quarters of the run and its end. */
function evaluationSteps(topic: Topic, maxSteps: number): number[] {
  const steps = new Set<number>([maxSteps]);
  for (const fraction of topic.earlyStop?.rungs ?? []) steps.add(rungStep(fraction, maxSteps));
  if (topic.metric?.score !== "final") for (const quarter of [0.25, 0.5, 0.75]) steps.add(Math.max(1, Math.round(quarter * maxSteps)));
  return [...steps].filter((step) => step >= 1 && step <= maxSteps).sort((a, b) => a - b);
}

/** The sampling of the base configuration: its file's `sampling`, the base overrides on top, the schema's defaults under. */
function baseSampling(topic: Topic, engine: { schema: z.ZodType; config: ConfigObject }): MeasurementProtocol["sampling"] {
  const inFile = isConfigObject(engine.config.sampling) ? engine.config.sampling : {};
  const field = (name: "temperature" | "top_p" | "max_tokens", fallback: number): number => {
    const value = overrideValue(topic, engine, `sampling.${name}`) ?? inFile[name];
    return typeof value === "number" ? value : fallback;
  };
  return { temperature: field("temperature", 1), top_p: field("top_p", 1), max_tokens: field("max_tokens", 16) };
}

/** The base overrides' value for a config field, under whichever key lands on it. */
export function overrideValue(topic: Topic, engine: { schema: z.ZodType; config: ConfigObject }, field: string): unknown {
  let found: unknown;
  for (const [key, value] of Object.entries(topic.base?.overrides ?? {})) if (overridePath(key, engine.config, engine.schema) === field) found = value;
  return found;
}

/** The topic as a campaign on it compares runs, given the engine schemas (the CLI passes swarm's). */
export async function measuredTopic(topic: Topic, schemas: EngineSchemas | undefined): Promise<Topic> {
  const engine = await engineSchemaFor(schemas, topic);
  const reproducibility = reproducibilityOf(topic, engine);
  return { ...withMeasurement(topic, decideMeasurement(topic, engine)), ...(reproducibility ? { reproducibility } : {}) };
}

/**
 * Whether a seed reproduces a run's curve, from the base swarm config: only the embedded
 * engine in `deterministic: true` is exact whatever the load (swarm/engines/README.md,
 * "Deterministic mode"); elsewhere the spread between seeds also holds the machine's
 * timing or the inference server's batching, and the report must say so.
 */
export function reproducibilityOf(topic: Topic, engine: { schema: z.ZodType; config: ConfigObject } | undefined): string | undefined {
  if (!engine || topic.base?.mode !== "swarm") return undefined;
  const model = isConfigObject(engine.config.model) ? engine.config.model : {};
  const kind = String(overrideValue(topic, engine, "model.kind") ?? model.kind ?? "embedded");
  const deterministic = (overrideValue(topic, engine, "deterministic") ?? engine.config.deterministic) === true;
  if (deterministic && kind === "embedded")
    return "Reproducibility: the embedded engine runs with deterministic: true, so a seed gives the same curve whatever the machine's load; the spread between seeds is the training's own.";
  if (deterministic)
    return `Reproducibility: deterministic: true fixes task order, batches and sampling seeds, but the ${kind} engine is not bit-reproducible (its inference server batches requests; GPU kernels differ across batch shapes), so the noise between runs is estimated from the seeds.`;
  return `Reproducibility: deterministic is off, so a run's curve also depends on how its clients interleave (the machine's load); the noise between runs is estimated from the seeds and includes that.`;
}
