import { dirname, relative, resolve } from "node:path";
import { stringify } from "yaml";
import type { Blueprint } from "../../blueprints/index.ts";

/**
 * `a3r topic new` and `a3r research "question" --base FILE`: a topic drafted from what an
 * existing blueprint or swarm config already says, so a newcomer writes a campaign in a
 * minute. The base experiment comes from the blueprint (or the config's folder), the metric
 * from the blueprint's front matter, and candidate knobs from the config's numeric keys
 * that RL runs commonly vary. Pure: reading the files is the caller's job.
 */
export interface TopicDraftInput {
  question: string;
  /** The blueprint the base experiment comes from, when drafted from one. */
  blueprint?: Blueprint;
  /** The swarm config (or classic config) as parsed, and where it lies. */
  config?: { path: string; values: Record<string, unknown> };
  /** `lr=0.1,0.2`: knobs the person named; when absent, proposals are used. */
  knobs?: Record<string, (number | string | boolean)[]>;
  metric?: { name: string; goal: "maximize" | "minimize" };
  /** Overrides for the base command (needed when drafting from a config alone). */
  command?: string;
  seeds?: number;
  /** Training steps per run; default: the blueprint's max_steps override, else the config's. */
  maxSteps?: number;
  /** Where the topic will be written: paths are made relative to its folder. */
  topicFile: string;
}

export interface TopicDraft {
  text: string;
  /** Knobs proposed from the config, with their candidates (shown to the person). */
  proposals: KnobProposal[];
  /** What could not be inferred and took a default (said once, so nothing is silent). */
  assumptions: string[];
}

export interface KnobProposal {
  key: string;
  current: number;
  candidates: number[];
}

/** Config keys RL runs commonly vary, in the order they are proposed. */
const knownKnobs = [
  "optimizer.lr",
  "lr",
  "learning_rate",
  "optimizer.kl_coef",
  "kl_coef",
  "optimizer.clip",
  "clip",
  "num_repeat",
  "train_batch_size",
  "sampling.temperature",
  "temperature",
];

/** Numeric keys of the config that are worth varying, each with candidates around its value. */
export function proposeKnobs(values: Record<string, unknown>, limit = 3): KnobProposal[] {
  const proposals: KnobProposal[] = [];
  for (const key of knownKnobs) {
    const current = valueAt(values, key);
    if (typeof current !== "number" || !Number.isFinite(current) || current === 0) continue;
    proposals.push({ key, current, candidates: candidatesAround(key, current) });
    if (proposals.length >= limit) break;
  }
  return proposals;
}

/** Halving and doubling, which is how a first screen brackets a value; bounded where the key is. */
function candidatesAround(key: string, current: number): number[] {
  if (Number.isInteger(current) && !key.endsWith("lr") && !key.includes("rate")) {
    return [...new Set([current, Math.max(1, Math.round(current / 2)), current * 2])];
  }
  const round = (value: number) => Number(value.toPrecision(3));
  const upper = key.endsWith("clip") || key.endsWith("temperature") ? Math.min(current * 2, key.endsWith("clip") ? 1 : 2) : current * 2;
  return [...new Set([current, round(current / 2), round(upper)])];
}

function valueAt(values: Record<string, unknown>, dotted: string): unknown {
  let node: unknown = values;
  for (const part of dotted.split(".")) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * `./x` or `../x` from the topic's folder (the form a topic resolves against its own file),
 * so a topic beside its code moves with it; absolute when the two share nothing but `/`.
 */
function fromTopic(topicFile: string, path: string): string {
  const folder = dirname(resolve(topicFile));
  const rel = relative(folder, path);
  if (rel === "") return ".";
  const ups = rel.split("/").filter((part) => part === "..").length;
  if (ups >= folder.split("/").filter(Boolean).length) return path;
  return rel.startsWith("..") ? rel : `./${rel}`;
}

export function draftTopic(input: TopicDraftInput): TopicDraft {
  const assumptions: string[] = [];
  const blueprint = input.blueprint;
  const configPath = blueprint?.config ?? input.config?.path ?? null;
  const mode = blueprint?.mode ?? (input.config && "model" in input.config.values ? "swarm" : "classic");
  const codebase = blueprint?.codebase ?? dirname(input.config!.path);
  if (!blueprint) assumptions.push(`codebase: the config's folder (${codebase})`);
  const command = input.command ?? blueprint?.command;
  if (command === undefined || command.trim() === "") throw new Error("a command is needed: give --command, or draft from a blueprint");
  const metric = input.metric ?? metricOf(blueprint) ?? { name: mode === "swarm" ? "rollout_reward_mean" : "reward_mean", goal: "maximize" as const };
  if (!input.metric && !metricOf(blueprint)) assumptions.push(`metric: ${metric.name} (${metric.goal}); give --metric NAME to change it`);
  const proposals = input.config ? proposeKnobs(input.config.values) : [];
  let knobs = input.knobs;
  if (knobs === undefined || Object.keys(knobs).length === 0) {
    const first = proposals[0];
    if (first === undefined) throw new Error("no knob given and none to propose: give --knob key=v1,v2 (a config key and its candidate values)");
    knobs = { [first.key]: first.candidates };
    assumptions.push(`knob: ${first.key} at ${first.candidates.join(", ")} (proposed from its value ${first.current}); give --knob to choose`);
  }
  const base: Record<string, unknown> = {
    mode,
    codebase: fromTopic(input.topicFile, codebase),
    interpreter: blueprint?.venv ? (blueprint.venv.includes("/") ? fromTopic(input.topicFile, blueprint.venv) : blueprint.venv) : "node",
    ...(configPath === null ? {} : { config: fromTopic(input.topicFile, configPath) }),
    command,
    time_budget: blueprint?.timeBudget && blueprint.timeBudget !== "" ? blueprint.timeBudget : "1h",
    gpus: typeof blueprint?.frontMatter.gpus === "number" ? blueprint.frontMatter.gpus : 0,
    seed_key: "seed",
    // The blueprint's supervision settings hold for every run drafted from it.
    ...(typeof blueprint?.frontMatter.first_signal_timeout === "string" ? { first_signal_timeout: blueprint.frontMatter.first_signal_timeout } : {}),
    ...(blueprint?.frontMatter.worker !== undefined ? { blueprint: { worker: blueprint.frontMatter.worker } } : {}),
  };
  if (!blueprint?.venv) assumptions.push("interpreter: node on the worker's PATH");
  const steps = stepLimit(input, blueprint);
  // A drafted topic states its step limit: left out, every run takes the config's full
  // length, which is what a first screen of candidates should not pay for by surprise.
  if (steps !== undefined) base.overrides = { max_steps: steps.value };
  const seeds = input.seeds ?? 3;
  const firstStageRuns = Object.values(knobs).reduce((runs, values) => runs * values.length, 1) * seeds;
  assumptions.push(
    `cost: the first stage runs ${firstStageRuns} experiment(s) (${Object.values(knobs)
      .map((values) => values.length)
      .join(
        " x ",
      )} value(s) x ${seeds} seed(s)), each ${steps === undefined ? "as long as its command trains (no max_steps found; give --max-steps N)" : `up to ${steps.value} training steps (${steps.from})`} within ${String(base.time_budget)}; budgets allow 3 stages and 24 experiments`,
  );
  const front = {
    title: input.question,
    metric: { name: metric.name, goal: metric.goal, score: "area" },
    base,
    knobs,
    seeds,
    budgets: { stages: 3, experiments: 24 },
  };
  const text = `---\n${stringify(front, { lineWidth: 0 })}---\n${input.question}\n`;
  return { text, proposals, assumptions };
}

/** The step limit a drafted topic carries, and where it came from (said in the draft). */
function stepLimit(input: TopicDraftInput, blueprint: Blueprint | undefined): { value: number; from: string } | undefined {
  if (input.maxSteps !== undefined) return { value: input.maxSteps, from: "--max-steps" };
  const fromBlueprint = (blueprint?.frontMatter.overrides as Record<string, unknown> | undefined)?.max_steps;
  if (typeof fromBlueprint === "number" && Number.isInteger(fromBlueprint) && fromBlueprint > 0)
    return { value: fromBlueprint, from: "the blueprint's overrides" };
  const fromConfig = input.config ? valueAt(input.config.values, "max_steps") : undefined;
  if (typeof fromConfig === "number" && Number.isInteger(fromConfig) && fromConfig > 0)
    return { value: fromConfig, from: "the config's max_steps; give --max-steps N for a shorter screen" };
  return undefined;
}

function metricOf(blueprint: Blueprint | undefined): { name: string; goal: "maximize" | "minimize" } | undefined {
  const metric = blueprint?.frontMatter.metric as { name?: unknown; goal?: unknown } | undefined;
  if (typeof metric?.name !== "string") return undefined;
  return { name: metric.name, goal: metric.goal === "minimize" ? "minimize" : "maximize" };
}

/** `lr=0.1,0.2` → `{ lr: [0.1, 0.2] }`; values that read as numbers or booleans become them. */
export function parseKnobFlag(flag: string): [string, (number | string | boolean)[]] | undefined {
  const equals = flag.indexOf("=");
  if (equals <= 0) return undefined;
  const key = flag.slice(0, equals).trim();
  if (!/^[A-Za-z_][\w.]{0,80}$/.test(key)) return undefined;
  const values = flag
    .slice(equals + 1)
    .split(",")
    .map((value) => value.trim())
    .filter((value) => value !== "")
    .map((value) => (value === "true" ? true : value === "false" ? false : Number.isFinite(Number(value)) ? Number(value) : value));
  return values.length >= 2 ? [key, values] : undefined;
}
