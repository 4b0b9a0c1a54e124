import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { z } from "zod";
import {
  allowPatternLimits,
  commandRuleSchema,
  defaultCommandRules,
  isFileRelative,
  isProgramName,
  mergeCommandPolicy,
  wholeLinePattern,
  type CommandRule,
} from "../../blueprints/index.ts";
import { readFrontMatter } from "../../blueprints/front-matter.ts";
import { budgetAxes, defaultBudgetAxis, type BudgetAxis } from "./budget-axis.ts";
import { parseDuration } from "../../core/duration.ts";
import { A3rError } from "../../core/errors.ts";
import { pathExists } from "../../core/path-exists.ts";
import { earlyStopHint, earlyStopSchema, type EarlyStopRule } from "./early-stop.ts";

/**
 * A research topic: a markdown file whose body states the question in words, with an
 * optional YAML front matter holding what a deterministic planner needs:
 *
 * ```yaml
 * title: Which learning rate learns item-color fastest?
 * metric: { name: rollout_reward_mean, goal: maximize, score: area, reference: 0.03,
 *           range: [0, 1], equivalence: 0.02 }   # clip intervals; "tied within 0.02" is an answer
 * base: { mode: swarm, codebase: /abs, interpreter: /abs/node, config: /abs/x.yaml,
 *         command: "node bin/a3r.js ...", time_budget: 10m, overrides: { max_steps: 20 } }
 * knobs: { lr: [0.2, 0.05, 0.5] }      # the first value of each knob is the baseline
 *   # or with the range refinement must stay in: { clip: { values: [0.2, 0.05, 1], min: 0, max: 1 } }
 * seeds: 2
 * budgets: { stages: 3, experiments: 24, gpu_hours: 4, wall_time: 2h, llm_tokens: 2000000, llm_usd: 20 }
 * hosts: ../hosts/local-only.yaml      # relative to the topic file
 * review: false
 * early_stop: { rungs: [0.25, 0.5], keep: 0.5 }   # optional: stop hopeless runs at rungs (early-stop.ts)
 * commands:                            # the campaign's command policy (optional)
 *   allow: ['python3 train\.py( --[\w.=/:-]+)*']   # plain lines a planner may add without approval
 *   rules: [{ id: no-git-push, pattern: 'git\s+push', reason: ..., severity: error }]
 * ```
 *
 * A topic without front matter (a plain sentence) is accepted: every machine field is then
 * absent and the heuristic planner says what it needs (see `heuristicNeeds`).
 */
const knobValue = z.union([z.number(), z.string(), z.boolean()]);

const metricSchema = z.strictObject({
  name: z.string().min(1),
  goal: z.enum(["maximize", "minimize"]),
  /** Which number of a run's curve is compared across configurations. */
  score: z.enum(["final", "best", "area"]).default("final"),
  /** A level any working run beats (chance, a published number): the baseline's prediction. */
  reference: z.number().optional(),
  /** The values the metric can take, e.g. [0, 1] for a success rate: intervals are clipped to it. */
  range: z
    .tuple([z.number(), z.number()])
    .refine(([low, high]) => low < high, "[low, high] with low below high, e.g. [0, 1]")
    .optional(),
  /**
   * Practical-equivalence margin: two configurations whose means differ by less than this
   * are the same for the question (two one-sided tests), which is an answer, not a failure.
   */
  equivalence: z.number().positive().optional(),
  /**
   * How runs are measured when a knob changes how the metric itself is sampled (a
   * temperature, top_p): `auto` compares them on fixed-protocol eval episodes where the
   * engine can run them (swarm mode: leader/design/measurement-protocol.ts), `training`
   * keeps the training metric as it is (the report then says the comparison is biased).
   * Absent means `auto`.
   */
  protocol: z.enum(["auto", "training"]).optional(),
});

/** A knob's candidate values, optionally with the range its values must stay in when refined. */
const knobSpec = z.union([
  z.array(knobValue).min(1, "at least one value (the first is the baseline)"),
  z
    .strictObject({
      values: z.array(knobValue).min(1, "at least one value (the first is the baseline)"),
      min: z.number().optional(),
      max: z.number().optional(),
    })
    .refine((spec) => spec.min === undefined || spec.max === undefined || spec.min <= spec.max, "min must not be above max")
    .refine(
      (spec) =>
        spec.values.every(
          (value) => typeof value !== "number" || ((spec.min === undefined || value >= spec.min) && (spec.max === undefined || value <= spec.max)),
        ),
      "every value must lie within min and max",
    ),
]);

const durationText = z.union([z.string(), z.number()]).refine((value) => parseDuration(value) !== undefined, "a duration such as 20m, 4h or 1h30m");

// Relative paths start with ./ or ../ and mean the topic file's own folder, so an example
// topic works wherever its clone lies (the campaign's copy gets them absolute).
const basePath = z
  .string()
  .min(1)
  .refine((value) => isAbsolute(value) || isFileRelative(value), "an absolute path, or one starting with ./ or ../ (relative to the topic file)");
const interpreterPath = z
  .string()
  .min(1)
  .refine(
    (value) => isAbsolute(value) || isFileRelative(value) || isProgramName(value),
    "an absolute path, one starting with ./ or ../ (relative to the topic file), or a program on the worker's PATH such as node",
  );

const baseSchema = z.strictObject({
  mode: z.enum(["swarm", "classic"]).default("classic"),
  codebase: basePath,
  interpreter: interpreterPath,
  config: basePath.nullable().default(null),
  command: z.string().min(1),
  time_budget: durationText.default("1h"),
  first_signal_timeout: durationText.optional(),
  gpus: z.int().nonnegative().default(1),
  /** Fixed overrides every experiment gets (e.g. a shorter max_steps). */
  overrides: z.record(z.string(), knobValue).default({}),
  /** The config key each experiment's seed is written to (as an override). */
  seed_key: z.string().min(1).default("seed"),
  /** Extra front-matter fields copied into every blueprint (e.g. worker settings). */
  blueprint: z.record(z.string(), z.unknown()).default({}),
});

const budgetsSchema = z.strictObject({
  stages: z.int().positive().default(3),
  experiments: z.int().positive().default(50),
  gpu_hours: z.number().nonnegative().optional(),
  wall_time: durationText.optional(),
  /** Input plus output tokens of every model call of the campaign (leader and workers). */
  llm_tokens: z
    .number("a positive whole number of tokens such as 2000000")
    .int("a positive whole number of tokens such as 2000000")
    .positive("a positive whole number of tokens such as 2000000")
    .optional(),
  /** US dollars of every model call of the campaign, priced by llm/prices.ts. */
  llm_usd: z
    .number("a positive amount of US dollars such as 20")
    .positive("a positive amount of US dollars such as 20")
    .refine(Number.isFinite, "a positive amount of US dollars such as 20")
    .optional(),
});

const regexSource = z
  .string()
  .min(1)
  .refine((source) => {
    try {
      wholeLinePattern(source);
      return true;
    } catch {
      return false;
    }
  }, "a regular expression (JavaScript syntax, no backreferences or lookarounds: it is matched in linear time) against a whole command line");

/**
 * The campaign's command policy. `allow`: command lines a planner may add without a
 * person's approval (each pattern must match a whole line). `rules`: rules every blueprint
 * of the campaign is checked against on top of the defaults, which they cannot weaken.
 */
const commandsSchema = z.strictObject({
  allow: z
    .array(regexSource)
    .max(allowPatternLimits.maxPatterns, `at most ${allowPatternLimits.maxPatterns} allow patterns (each is matched against every line a planner adds)`)
    .default([]),
  rules: z.array(commandRuleSchema).default([]),
});

const frontMatterSchema = z.strictObject({
  title: z.string().min(1).optional(),
  metric: metricSchema,
  base: baseSchema.optional(),
  knobs: z.record(z.string().regex(/^[A-Za-z_][\w.]*$/, "a config key such as lr or optimizer.lr"), knobSpec).optional(),
  seeds: z.int().min(1).max(30).default(2),
  budgets: budgetsSchema.default({ stages: 3, experiments: 50 }),
  hosts: z.string().min(1).optional(),
  review: z.boolean().default(false),
  /** Take an earlier campaign's finished run with the same identity instead of training again (campaign/history/). */
  reuse: z.boolean().default(true),
  commands: commandsSchema.default({ allow: [], rules: [] }),
  /** How often the leader polls its runs while it watches a stage (default 2s; tests use 200ms). */
  leader: z.strictObject({ poll_interval: durationText.optional() }).default({}),
  /** Opt-in early stopping of hopeless runs (leader/domain/early-stop.ts). */
  early_stop: earlyStopSchema.optional(),
  /** What runs are compared at equal amounts of (leader/domain/budget-axis.ts); default from the knobs. */
  budget_axis: z.enum(budgetAxes).optional(),
  /** Who makes a decision the language model cannot (leader/planners/llm/fallback-planner.ts); unset: nobody, with --planner llm. */
  planner_fallback: z.enum(["heuristic"]).optional(),
});

/** The leader's poll interval while watching, when the topic does not set one. */
export const defaultLeaderPollMs = 2000;

export type KnobValue = z.infer<typeof knobValue>;
export type TopicMetric = z.infer<typeof metricSchema>;
export interface KnobRange {
  min?: number;
  max?: number;
}
export type TopicBase = z.infer<typeof baseSchema>;

export interface TopicBudgets {
  stages: number;
  experiments: number;
  gpuHours: number | undefined;
  wallTimeMs: number | undefined;
  /** Language-model budget in tokens (input + output), checked before each call (llm/budget.ts). */
  llmTokens: number | undefined;
  /** Language-model budget in US dollars, checked like `llmTokens`. */
  llmUsd: number | undefined;
}

export interface Topic {
  title: string;
  /** The question in words (the markdown body). */
  question: string;
  metric: TopicMetric | undefined;
  base: TopicBase | undefined;
  /** Knob name → candidate values; the first value is the baseline. Insertion order is kept. */
  knobs: Record<string, KnobValue[]>;
  /** Per knob, the range a refinement must stay in (`knobs: { clip: { values, min, max } }`). */
  knobRanges?: Record<string, KnobRange>;
  seeds: number;
  budgets: TopicBudgets;
  /** Absolute path of the hosts file, or undefined for this machine only. */
  hostsFile: string | undefined;
  review: boolean;
  /** Reuse finished runs of earlier campaigns with the same code, config, command and seed (`reuse: false` trains all). */
  reuse: boolean;
  /** The campaign's command policy (see `commandsSchema`): allowed lines and extra rules. */
  commands: { allow: string[]; rules: CommandRule[] };
  /** How often the leader asks the hosts about its runs while watching (`leader.poll_interval`). */
  leaderPollMs: number;
  /** Successive halving within each stage (`early_stop`); absent = every run completes. */
  earlyStop?: EarlyStopRule;
  /** The axis scores are compared on (`budget_axis`, else the fair one for the knobs). */
  budgetAxis: BudgetAxis;
  /** `planner_fallback: heuristic`: the heuristic makes the decisions the model cannot, with --planner llm too. */
  plannerFallback?: "heuristic";
  /**
   * Set by the leader, never written in a topic: the knobs change how the topic's metric
   * is sampled, so configurations are compared on this fixed-protocol metric instead
   * (leader/design/measurement-protocol.ts; `metric.name` is then the protocol's).
   */
  measurement?: MeasurementProtocol;
  /** Set by the leader: a knob changes how the metric is sampled and no fixed protocol could be planned; why. */
  measurementCaveat?: string;
  /** Set by the leader from the base config: whether a seed reproduces a run, in one sentence (design/measurement-protocol.ts). */
  reproducibility?: string;
}

/** A comparison moved from the training metric to fixed-protocol eval episodes, and why. */
export interface MeasurementProtocol {
  /** The metric the topic named (measured at each configuration's own sampling). */
  trainingMetric: string;
  /** What is compared instead (the swarm server's protocol_eval_reward_mean). */
  metric: string;
  /** The knobs that change the measurement, each with the config field and the engine schema's reason. */
  knobs: { knob: string; field: string; why: string }[];
  /** Every run is evaluated after each multiple of this many steps (swarm.yaml `eval_protocol.every`)... */
  every: number;
  /** ...that is, after these training steps. */
  atSteps: number[];
  episodes: number;
  /** The one sampling every evaluation uses: the base configuration's. */
  sampling: { temperature: number; top_p: number; max_tokens: number };
}

const fieldHints: Record<string, string> = {
  early_stop: earlyStopHint,
  budget_axis: "budget_axis: steps | episodes | tokens | wall | gpu_hours (what runs are compared at equal amounts of)",
  metric: "add `metric: { name: <metric in metrics.jsonl>, goal: maximize|minimize }`",
  knobs: "give each knob a list of candidate values, e.g. `knobs: { lr: [0.2, 0.05, 0.5] }` (the first is the baseline)",
  base: "describe the base experiment: `base: { codebase, interpreter, config, command, time_budget }` with absolute paths",
  budgets: "budgets: { stages: 3, experiments: 24, gpu_hours: 4, wall_time: 2h, llm_tokens: 2000000, llm_usd: 20 }",
  commands:
    "commands: { allow: ['python3 train\\.py( --[\\w.=/:-]+)*'], rules: [{ id: no-git-push, pattern: 'git\\s+push', reason: runs must not publish code, severity: error }] } (rules may only add to the defaults, with new ids)",
};

/** Hints for single fields, where the field's own advice is sharper than its section's. */
const budgetFieldHints: Record<string, string> = {
  "budgets.llm_tokens":
    "write the campaign's language-model budget in tokens (input plus output, all calls), e.g. `budgets: { llm_tokens: 2000000 }`, or remove it for no token limit",
  "budgets.llm_usd": "write the campaign's language-model budget in US dollars, e.g. `budgets: { llm_usd: 20 }`, or remove it for no dollar limit",
};

/**
 * Parses topic text. `file` names it in errors; a relative hosts path is resolved against
 * the file's folder (or `baseDir`). Throws TOPIC_INVALID naming the line, the field and
 * what to write. Pure: checking that the hosts file exists is `loadTopic`'s job.
 */
export function parseTopic(text: string, options: { file?: string; baseDir?: string } = {}): Topic {
  const file = options.file ?? "<topic>";
  const front = readFrontMatter(text);
  const firstProblem = front.problems.find((item) => item.severity === "error");
  if (firstProblem) throw new A3rError("TOPIC_INVALID", `${file}:${firstProblem.line}: ${firstProblem.message}`, { where: file, hint: firstProblem.hint });
  const question = front.body.trim();
  if (!front.present) {
    if (question === "") throw new A3rError("TOPIC_INVALID", `${file}: the topic is empty`, { where: file, hint: "write the research question in a sentence" });
    return {
      title: firstLine(question),
      question,
      metric: undefined,
      base: undefined,
      knobs: {},
      seeds: 2,
      budgets: toBudgets(budgetsSchema.parse({})),
      hostsFile: undefined,
      review: false,
      reuse: true,
      commands: { allow: [], rules: [] },
      leaderPollMs: defaultLeaderPollMs,
      budgetAxis: "steps",
    };
  }
  // reportInput: without it zod leaves `input` out of every issue, and a wrong value would read as "missing".
  const parsed = frontMatterSchema.safeParse(front.data, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map(String).join(".");
    const top = String(issue.path[0] ?? "");
    const line = front.fieldLines[path] ?? front.fieldLines[top] ?? 1;
    const what = issue.code === "invalid_type" && issue.input === undefined ? `${path} is missing` : `${path === "" ? "front matter" : path}: ${issue.message}`;
    throw new A3rError("TOPIC_INVALID", `${file}:${line}: ${what}`, {
      where: `${file}:${line}`,
      hint: budgetFieldHints[path] ?? fieldHints[top] ?? "fix that field (see leader/domain/topic.ts for the topic format)",
    });
  }
  const data = parsed.data;
  if (data.base?.blueprint.command_rules !== undefined) {
    const line = front.fieldLines["base.blueprint.command_rules"] ?? front.fieldLines["base.blueprint"] ?? 1;
    throw new A3rError("TOPIC_INVALID", `${file}:${line}: base.blueprint.command_rules: the campaign's command rules belong under commands.rules`, {
      where: `${file}:${line}`,
      hint: fieldHints.commands!,
    });
  }
  try {
    mergeCommandPolicy(defaultCommandRules, data.commands.rules);
  } catch (error) {
    const line = front.fieldLines["commands.rules"] ?? front.fieldLines.commands ?? 1;
    throw new A3rError("TOPIC_INVALID", `${file}:${line}: commands.rules: ${(error as Error).message}`, {
      where: `${file}:${line}`,
      hint: fieldHints.commands!,
    });
  }
  const baseDir = options.baseDir ?? (options.file ? dirname(resolve(options.file)) : process.cwd());
  return {
    title: data.title ?? firstLine(question),
    question,
    metric: data.metric,
    base: data.base === undefined ? undefined : withPathsFrom(baseDir, data.base),
    ...knobsOf(data.knobs),
    seeds: data.seeds,
    budgets: toBudgets(data.budgets),
    hostsFile: data.hosts === undefined ? undefined : resolve(baseDir, data.hosts),
    review: data.review,
    reuse: data.reuse,
    commands: data.commands,
    leaderPollMs: data.leader.poll_interval === undefined ? defaultLeaderPollMs : parseDuration(data.leader.poll_interval)!,
    ...(data.early_stop === undefined ? {} : { earlyStop: data.early_stop }),
    budgetAxis: data.budget_axis ?? defaultBudgetAxis(Object.keys(data.knobs ?? {})),
    ...(data.planner_fallback === undefined ? {} : { plannerFallback: data.planner_fallback }),
  };
}

/** The base experiment with its file-relative paths made absolute against the topic's folder. */
function withPathsFrom<Base extends { codebase: string; interpreter: string; config: string | null }>(baseDir: string, base: Base): Base {
  const absolute = (path: string): string => (isFileRelative(path) ? resolve(baseDir, path) : path);
  return { ...base, codebase: absolute(base.codebase), interpreter: absolute(base.interpreter), config: base.config === null ? null : absolute(base.config) };
}

/** A knob written as a list, or as `{ values, min, max }`, split into its values and its range. */
function knobsOf(knobs: Record<string, z.infer<typeof knobSpec>> | undefined): { knobs: Record<string, KnobValue[]>; knobRanges: Record<string, KnobRange> } {
  const values: Record<string, KnobValue[]> = {};
  const ranges: Record<string, KnobRange> = {};
  for (const [name, spec] of Object.entries(knobs ?? {})) {
    if (Array.isArray(spec)) values[name] = spec;
    else {
      values[name] = spec.values;
      ranges[name] = { ...(spec.min === undefined ? {} : { min: spec.min }), ...(spec.max === undefined ? {} : { max: spec.max }) };
    }
  }
  return { knobs: values, knobRanges: ranges };
}

/** Reads and parses a topic file, and refuses a hosts file that does not exist. */
export async function loadTopic(path: string): Promise<{ topic: Topic; text: string }> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT")
      throw new A3rError("FILE_NOT_FOUND", `no topic file at ${path}`, { where: path, hint: "give the path of a markdown topic file" });
    throw error;
  }
  const topic = parseTopic(text, { file: path });
  if (topic.hostsFile !== undefined && !(await pathExists(topic.hostsFile))) {
    throw new A3rError("TOPIC_INVALID", `${path}: hosts file ${topic.hostsFile} does not exist`, {
      where: path,
      hint: "fix `hosts:` (a path relative to the topic file), or remove it to run on this machine",
    });
  }
  return { topic, text };
}

/** What the heuristic planner still needs from a topic; empty when it can plan. */
export function heuristicNeeds(topic: Topic): string[] {
  const needs: string[] = [];
  if (!topic.metric) needs.push(fieldHints.metric!);
  if (!topic.base) needs.push(fieldHints.base!);
  if (Object.keys(topic.knobs).length === 0)
    needs.push("add `knobs:` naming the config keys to vary and their candidate values, e.g. `knobs: { lr: [0.2, 0.05, 0.5] }`");
  return needs;
}

function toBudgets(budgets: z.infer<typeof budgetsSchema>): TopicBudgets {
  return {
    stages: budgets.stages,
    experiments: budgets.experiments,
    gpuHours: budgets.gpu_hours,
    wallTimeMs: budgets.wall_time === undefined ? undefined : parseDuration(budgets.wall_time),
    llmTokens: budgets.llm_tokens,
    llmUsd: budgets.llm_usd,
  };
}

function firstLine(text: string): string {
  const line = text.split("\n").find((candidate) => candidate.trim() !== "") ?? "";
  return line
    .replace(/^#+\s*/, "")
    .trim()
    .slice(0, 120);
}
