import compassWalk from "../examples/tasks/compass-walk/task.ts";
import { defaultOptimizer, trainInProcess, type InProcessTrainingOptions } from "../examples/tasks/in-process-training.ts";
import itemColor from "../examples/tasks/item-color/task.ts";
import type { SwarmTask, TaskInstance } from "../examples/tasks/task-types.ts";
import { seededNormal } from "../core/seeded-normal.ts";
import { summarizeConfigurations } from "../leader/domain/configurations.ts";
import { decideEarlyStops, earlyStopsApplyTo, rungStep, type EarlyStopRule } from "../leader/domain/early-stop.ts";
import { rankAgainstIncumbent } from "../leader/domain/incumbent.ts";
import type { ExperimentOutcome, PlannerStep, StageRecord } from "../leader/domain/planner.ts";
import { parseTopic } from "../leader/domain/topic.ts";
import { campaignRanking, planNext } from "../leader/planners/heuristic/heuristic-planner.ts";
import type { Benchmark, BenchRow } from "./report.ts";
import { measurementTopics } from "./research-measurement-topics.ts";
import { curveArea, type KnownAnswerTopic, type RunResult } from "./research-topic-types.ts";

export type { KnownAnswerTopic, RunResult };

/**
 * Does a campaign reach the right answer, and for how much compute? Known-answer topics on
 * the embedded engine (in-process GRPO, examples/tasks/in-process-training.ts; the seed
 * sets the model's initialization and the task stream both). For each topic:
 *
 * - the truth: a brute-force grid, every value of the knob with GRID_SEEDS seeds (seeds
 *   1001.., independent of the campaign's), compared as the leader compares (Welch's t
 *   against the best, Holm-corrected, TOST within the topic's margin); the values "tied
 *   with the grid's best" are the best and every value the grid does not show worse;
 * - the campaign: the heuristic planner's real decisions (screen, replicate, stop) over
 *   runs of the same trainer, 2 seeds to start, a budget as large as the grid; the topics
 *   scored by area opt in to early stopping (`early_stop: { rungs: [0.25, 0.5], keep: 0.5 }`),
 *   decided by the leader's own rule (leader/domain/early-stop.ts) in the stages the leader
 *   applies it to (screen, refine), a cut run booked with the episodes up to its rung;
 * - right: the campaign names a value tied with the grid's best (its best, and every
 *   value it calls the same within the margin); wrong: it names one the grid shows worse.
 *
 * Knob values are given as text so the planner screens and replicates but does not
 * propose values the grid has no truth for. Compute is rollout episodes. Env:
 * A3R_BENCH_GRID_SEEDS (default 6), A3R_BENCH_TOPICS (a comma list of topic names to run).
 */
const gridSeeds = Number(process.env.A3R_BENCH_GRID_SEEDS ?? 6);
const only = process.env.A3R_BENCH_TOPICS?.split(",").map((name) => name.trim());
/** Simulated campaigns per check of the stated error rate (falseClaimRates). */
const falseClaimCampaigns = Number(process.env.A3R_BENCH_NULL_CAMPAIGNS ?? 1000);

type Task = SwarmTask<TaskInstance>;

const base = { steps: 20, batchSize: 8, numRepeat: 8, strategy: "episodes", optimizer: defaultOptimizer } as const;

async function areaRun(task: Task, options: Partial<InProcessTrainingOptions>, seed: number): Promise<RunResult> {
  const result = await trainInProcess({ ...base, task, seed, ...options });
  return {
    score: curveArea(result.rewardCurve.map((value, index) => ({ step: index + 1, value }))),
    episodes: result.episodes,
    curve: { rewards: result.rewardCurve, episodesByStep: result.episodesByStep, maxSteps: options.steps ?? base.steps },
  };
}

/** What the bench's area topics declare: successive halving at a quarter and half of each run. */
const halving: EarlyStopRule = { rungs: [0.25, 0.5], keep: 0.5, window: 3 };

const episodesBudget = base.steps * base.batchSize * base.numRepeat;

const knownTopics: KnownAnswerTopic[] = [
  {
    name: "lr",
    question: "Which learning rate makes item-color learn fastest (mean reward over 20 steps)?",
    knob: "lr",
    values: ["0.2", "0.05", "0.5", "1"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    run: (value, seed) => areaRun(itemColor as unknown as Task, { optimizer: { ...defaultOptimizer, lr: Number(value) } }, seed),
  },
  {
    name: "group-size-equal-episodes",
    question: "Which group size (num_repeat) learns item-color best for the same 1280 rollout episodes?",
    knob: "num_repeat",
    values: ["8", "4", "16"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    // Equal episodes: steps x batch x num_repeat is the same for every value.
    run: (value, seed) => areaRun(itemColor as unknown as Task, { numRepeat: Number(value), steps: episodesBudget / (base.batchSize * Number(value)) }, seed),
  },
  {
    name: "c1-vs-c3-per-step",
    question: "Does batching only groups with a signal (C3) beat batching every group (C1), per optimizer step?",
    knob: "strategy",
    values: ["episodes", "non-dummy-tasks"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    run: (value, seed) => areaRun(itemColor as unknown as Task, { strategy: value as InProcessTrainingOptions["strategy"] }, seed),
  },
  {
    name: "c1-vs-c3-per-episode",
    question: "Which batching reaches a trailing reward of 0.5 with fewer rollout episodes (C3 plays more per step)?",
    knob: "strategy",
    values: ["episodes", "non-dummy-tasks"],
    goal: "minimize",
    range: [0, 40 * base.batchSize * base.numRepeat * 8],
    equivalence: 300,
    run: async (value, seed) => {
      // Stops at the target; a run that never reaches it in 40 steps scores every episode it played.
      const result = await trainInProcess({
        ...base,
        task: itemColor as unknown as Task,
        seed,
        steps: 40,
        strategy: value as InProcessTrainingOptions["strategy"],
        stopAtReward: 0.5,
        window: 5,
      });
      return { score: result.episodes, episodes: result.episodes };
    },
  },
  {
    name: "kl",
    question: "Which KL coefficient lets item-color learn fastest?",
    knob: "kl_coef",
    values: ["0.001", "0.1", "1"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    run: (value, seed) => areaRun(itemColor as unknown as Task, { optimizer: { ...defaultOptimizer, kl_coef: Number(value) } }, seed),
  },
  {
    name: "compass-lr",
    question: "Which learning rate makes compass-walk learn fastest?",
    knob: "lr",
    values: ["0.2", "0.05", "1"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    run: (value, seed) => areaRun(compassWalk as unknown as Task, { optimizer: { ...defaultOptimizer, lr: Number(value) } }, seed),
  },
  // Fresh: added with the sequential design, before any of their runs was looked at.
  {
    name: "clip",
    question: "Which PPO clip range makes item-color learn fastest?",
    knob: "clip",
    values: ["0.2", "0.05", "0.5"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    fresh: true,
    run: (value, seed) => areaRun(itemColor as unknown as Task, { optimizer: { ...defaultOptimizer, clip: Number(value) } }, seed),
  },
  {
    name: "compass-kl",
    question: "Which KL coefficient lets compass-walk learn fastest?",
    knob: "kl_coef",
    values: ["0.001", "0.1", "1"],
    goal: "maximize",
    range: [0, 1],
    equivalence: 0.05,
    earlyStop: halving,
    fresh: true,
    run: (value, seed) => areaRun(compassWalk as unknown as Task, { optimizer: { ...defaultOptimizer, kl_coef: Number(value) } }, seed),
  },
];

/** The topics above, and those whose knob changes how the training metric is measured (judged with and without the fixed protocol). */
export const topics: KnownAnswerTopic[] = [...knownTopics, ...measurementTopics];

function topicText(topic: KnownAnswerTopic, experiments: number): string {
  return `---
metric: { name: score, goal: ${topic.goal}, score: final, range: [${topic.range.join(", ")}], equivalence: ${topic.equivalence} }
base: { mode: classic, codebase: /bench, interpreter: /usr/bin/node, command: run, gpus: 0 }
knobs:
  ${topic.knob}: [${topic.values.map((value) => JSON.stringify(value)).join(", ")}]
seeds: 2${topic.earlyStop ? `\nearly_stop: { rungs: [${topic.earlyStop.rungs.join(", ")}], keep: ${topic.earlyStop.keep}, window: ${topic.earlyStop.window} }` : ""}
budgets: { stages: 6, experiments: ${experiments} }
---
${topic.question}
`;
}

/** How a campaign reads a run: the training score, or the fixed protocol's (a measurement topic's "protocol on"). */
type Scoring = "training" | "protocol";

export interface Verdict {
  topic: string;
  /** A measurement topic is judged twice: "protocol on" counts in the goals, "protocol off" is shown beside it. */
  variant?: "protocol on" | "protocol off";
  fresh: boolean;
  right: boolean;
  decided: boolean;
  answer: string;
  /** Why the campaign stopped, in the planner's words. */
  explanation: string;
  truth: string;
  /** Whether the grid itself (every value x GRID_SEEDS seeds, unpaired) separates or ties the values: how decidable the topic is at all. */
  gridDecided: boolean;
  campaignEpisodes: number;
  gridEpisodes: number;
  campaignRuns: number;
  gridRuns: number;
}

/** What a topic's runs cost and score under one scoring. */
function scoreOf(result: RunResult, scoring: Scoring): number {
  return scoring === "protocol" ? result.protocol!.score : result.score;
}

function episodesOf(result: RunResult, scoring: Scoring): number {
  return result.episodes + (scoring === "protocol" ? result.protocol!.episodes : 0);
}

/**
 * The episodes a run cut after `step` consumed: its training episodes up to the step, and
 * under the protocol its eval episodes at the eval points up to the step (each eval point
 * taken to cost the same share of them).
 */
function episodesUpTo(result: RunResult, step: number, scoring: Scoring): number {
  const training = result.curve!.episodesByStep[Math.min(step, result.curve!.episodesByStep.length) - 1]!;
  if (scoring !== "protocol") return training;
  const points = result.protocol!.points;
  const shown = points.filter((point) => point.step <= step).length;
  return training + (points.length === 0 ? 0 : (result.protocol!.episodes * shown) / points.length);
}

/** The curve early stopping watches: the per-step training reward, or the protocol's eval points. */
function watchedCurve(result: RunResult, scoring: Scoring): { points: { step: number; value: number }[]; maxSteps: number; lastStep: number } | undefined {
  if (scoring === "protocol") {
    const protocol = result.protocol!;
    const lastStep = result.curve?.rewards.length ?? Math.max(0, ...protocol.points.map((point) => point.step));
    return { points: protocol.points, maxSteps: protocol.maxSteps, lastStep };
  }
  if (!result.curve) return undefined;
  return {
    points: result.curve.rewards.map((value, index) => ({ step: index + 1, value })),
    maxSteps: result.curve.maxSteps,
    lastStep: result.curve.rewards.length,
  };
}

type Runner = (value: string, seed: number) => Promise<RunResult>;

/** The truth and the campaign(s) of one topic; `run` replaces the topic's runs (a cache while developing). */
export async function judgeTopic(topic: KnownAnswerTopic, run: Runner = (value, seed) => topic.run(value, seed)): Promise<Verdict[]> {
  // Runs are deterministic in their seed: the two scorings of a measurement topic share them.
  const memo = new Map<string, Promise<RunResult>>();
  const runOnce: Runner = (value, seed) => {
    const key = `${value}\u0000${seed}`;
    if (!memo.has(key)) memo.set(key, run(value, seed));
    return memo.get(key)!;
  };
  const truthScoring: Scoring = topic.measurement ? "protocol" : "training";
  // The truth: every value with gridSeeds seeds, as one "stage" the leader's statistics read.
  const gridOutcomes: ExperimentOutcome[] = [];
  let gridEpisodes = 0;
  for (const value of topic.values) {
    for (let index = 0; index < gridSeeds; index += 1) {
      const seed = 1001 + index;
      const result = await runOnce(value, seed);
      gridEpisodes += episodesOf(result, truthScoring);
      gridOutcomes.push({ blueprintId: `grid-${value}-${seed}`, configurationId: value, seed, state: "succeeded", score: scoreOf(result, truthScoring) });
    }
  }
  const gridPlan = {
    stage: 1,
    kind: "screen" as const,
    rationale: "grid",
    hypotheses: [],
    configurations: topic.values.map((value) => ({
      id: value,
      settings: { [topic.knob]: value },
      delta: {},
      hypothesis: "grid",
      purpose: "grid",
      prediction: { kind: "records" as const, text: "" },
    })),
    experiments: gridOutcomes.map(({ blueprintId, configurationId, seed }) => ({ blueprintId, configurationId, seed })),
    decisions: [],
  };
  const grid = rankAgainstIncumbent(summarizeConfigurations([{ plan: gridPlan, outcomes: gridOutcomes }]), {
    goal: topic.goal,
    equivalence: topic.equivalence,
  })!;
  const tiedWithBest = new Set([grid.incumbent.configuration.settings[topic.knob] as string]);
  // The grid's configuration ids are the values themselves.
  for (const comparison of grid.comparisons) if (comparison.verdict !== "worse") tiedWithBest.add(comparison.otherId);
  const truth = `grid best ${grid.incumbent.configuration.id} (${grid.status}); tied with it: ${[...tiedWithBest].join(", ")}`;
  const gridDecided = grid.status === "separated" || grid.status === "tied";
  const base = { topic: topic.name, fresh: topic.fresh === true, truth, gridDecided, gridEpisodes, gridRuns: gridOutcomes.length };
  if (!topic.measurement) return [{ ...base, ...(await campaign(topic, runOnce, "training", tiedWithBest)) }];
  return [
    { ...base, variant: "protocol on", ...(await campaign(topic, runOnce, "protocol", tiedWithBest)) },
    { ...base, variant: "protocol off", ...(await campaign(topic, runOnce, "training", tiedWithBest)) },
  ];
}

/** The campaign: the planner's own decisions over fresh runs, scored one way. */
async function campaign(
  topic: KnownAnswerTopic,
  run: Runner,
  scoring: Scoring,
  tiedWithBest: ReadonlySet<string>,
): Promise<Pick<Verdict, "right" | "decided" | "answer" | "explanation" | "campaignEpisodes" | "campaignRuns">> {
  const parsed = parseTopic(topicText(topic, topic.values.length * gridSeeds));
  const history: StageRecord[] = [];
  let campaignEpisodes = 0;
  let step: PlannerStep = planNext({ topic: parsed, history, usage: { gpuHours: 0, wallTimeMs: 0 } });
  const trace: string[] = [];
  while (step.kind === "stage") {
    const plan = step.plan;
    const runs = [];
    for (const experiment of plan.experiments) {
      const configuration = plan.configurations.find((item) => item.id === experiment.configurationId)!;
      runs.push({ experiment, result: await run(String(configuration.settings[topic.knob]), experiment.seed) });
    }
    // Early stopping acts where the leader applies it, on the same rule; a cut run consumed
    // the episodes up to its rung's step.
    const cuts =
      parsed.earlyStop && earlyStopsApplyTo(plan.kind) ? simulateEarlyStops(runs, parsed.earlyStop, parsed.metric!, scoring) : new Map<string, number>();
    const outcomes: ExperimentOutcome[] = [];
    for (const { experiment, result } of runs) {
      const cutAt = cuts.get(experiment.blueprintId);
      campaignEpisodes += cutAt === undefined ? episodesOf(result, scoring) : episodesUpTo(result, cutAt, scoring);
      outcomes.push(
        cutAt === undefined
          ? { ...experiment, state: "succeeded", score: scoreOf(result, scoring) }
          : { ...experiment, state: "stopped_early", score: undefined },
      );
    }
    trace.push(`s${plan.stage} ${plan.kind} ${plan.experiments.length}${cuts.size > 0 ? ` (${cuts.size} cut)` : ""}`);
    history.push({ plan, outcomes });
    step = planNext({ topic: parsed, history, usage: { gpuHours: 0, wallTimeMs: 0 } });
  }
  // What the campaign claims: its comparisons at its last look's level (the planner's own).
  const summaries = summarizeConfigurations(history);
  const ranking = campaignRanking(parsed, history);
  const named = ranking
    ? [
        ranking.incumbent,
        ...summaries.filter((summary) => ranking.comparisons.some((row) => row.otherId === summary.configuration.id && row.verdict === "equivalent")),
      ]
    : [];
  const namedValues = named.map((summary) => String(summary.configuration.settings[topic.knob]));
  return {
    right: namedValues.length > 0 && namedValues.every((value) => tiedWithBest.has(value)),
    decided: step.reason === "separated" || step.reason === "equivalent",
    answer: `${step.reason}: ${namedValues.join(" = ")} [${trace.join(", ")}]`,
    explanation: step.explanation,
    campaignEpisodes,
    campaignRuns: history.reduce((sum, record) => sum + record.plan.experiments.length, 0),
  };
}

/**
 * The early stops the leader would make in one stage, decided rung by rung on each run's
 * curve truncated at the rung (a run is deterministic in its seed, so its first k steps
 * are those a live run would have shown). Returns the step each cut run stopped at.
 */
function simulateEarlyStops(
  runs: readonly { experiment: { blueprintId: string; configurationId: string }; result: RunResult }[],
  rule: EarlyStopRule,
  metric: { name: string; goal: "maximize" | "minimize"; equivalence?: number | undefined },
  scoring: Scoring,
): Map<string, number> {
  const stoppedAt = new Map<string, { rung: number; step: number }>();
  for (const [index, fraction] of rule.rungs.entries()) {
    const view = runs.flatMap(({ experiment, result }) => {
      const curve = watchedCurve(result, scoring);
      if (!curve) return [];
      const cut = stoppedAt.get(experiment.blueprintId);
      const shownTo = cut?.step ?? Math.min(curve.lastStep, rungStep(fraction, curve.maxSteps));
      return [
        {
          blueprintId: experiment.blueprintId,
          configurationId: experiment.configurationId,
          live: cut === undefined,
          maxSteps: curve.maxSteps,
          lastStep: shownTo,
          points: curve.points.filter((point) => point.step <= shownTo),
          ...(cut === undefined ? {} : { stoppedAtRung: cut.rung }),
        },
      ];
    });
    for (const stop of decideEarlyStops(view, rule, metric).stops)
      if (stop.rung === index + 1) stoppedAt.set(stop.blueprintId, { rung: stop.rung, step: stop.rungStep });
  }
  return new Map([...stoppedAt].map(([blueprintId, cut]) => [blueprintId, cut.step]));
}

/** The bench's goals (issue 28): campaigns decide at least this share of topics... */
const decidedGoal = 0.9;
/** ...for at most this share of the grid's episodes... */
const computeGoal = 0.35;
/** ...and answer every topic right. */
const rightGoal = 1;

function share(verdicts: readonly Verdict[], pick: (verdict: Verdict) => boolean): number {
  return verdicts.filter(pick).length / Math.max(1, verdicts.length);
}

function computeShare(verdicts: readonly Verdict[]): number {
  const grid = verdicts.reduce((sum, verdict) => sum + verdict.gridEpisodes, 0);
  return verdicts.reduce((sum, verdict) => sum + verdict.campaignEpisodes, 0) / Math.max(1, grid);
}

function label(verdict: Verdict): string {
  return `${verdict.topic}${verdict.variant ? ` (${verdict.variant})` : ""}${verdict.fresh ? " [fresh]" : ""}`;
}

/**
 * The stated error rate, checked: campaigns on simulated topics where the truth is set (each
 * run's score normal with spread 1 around its configuration's mean), driven by the same
 * planner. Under no difference (three equal means) every "worse" claim at any look is
 * false; with two means exactly the margin apart every "equivalent" claim is false. The
 * sequential design states at most 0.05 for each; a deterministic generator makes the
 * figures the same every run.
 *
 * `correlation` makes a seed move its runs together, as the embedded trainer's seed (model
 * init and task stream) does: a run's score is its mean + sqrt(|ρ|)·l·u_seed +
 * sqrt(1 − |ρ|)·e, u_seed shared by every configuration at that seed, e its own. Positive ρ
 * gives every configuration l = +1 (all pairs correlated ρ); negative gives the last
 * configuration l = −1 (its pairs correlated −|ρ|, as group size's are on the bench).
 */
export function falseClaimRates(campaigns: number, correlation = 0): { worse: number; equivalent: number } {
  const gaussian = seededNormal(2463534242);
  const margin = 0.5;
  const simulate = (means: Record<string, number>, claim: "worse" | "equivalent"): number => {
    const values = Object.keys(means);
    const topic = parseTopic(
      topicText(
        {
          name: "null",
          question: "Which x?",
          knob: "x",
          values,
          goal: "maximize",
          range: [-100, 100],
          equivalence: margin,
          run: () => Promise.reject(new Error("simulated")),
        },
        values.length * gridSeeds,
      ),
    );
    let claimed = 0;
    const shared = Math.sqrt(Math.abs(correlation));
    const own = Math.sqrt(1 - Math.abs(correlation));
    const loading = (value: string): number => (correlation < 0 && value === values.at(-1) ? -1 : 1);
    for (let campaign = 0; campaign < campaigns; campaign += 1) {
      const seedEffect = new Map<number, number>();
      const effectOf = (seed: number): number => {
        if (!seedEffect.has(seed)) seedEffect.set(seed, gaussian());
        return seedEffect.get(seed)!;
      };
      const history: StageRecord[] = [];
      let step: PlannerStep = planNext({ topic, history, usage: { gpuHours: 0, wallTimeMs: 0 } });
      let any = false;
      while (step.kind === "stage") {
        const plan = step.plan;
        history.push({
          plan,
          outcomes: plan.experiments.map((experiment) => {
            const configuration = plan.configurations.find((item) => item.id === experiment.configurationId)!;
            const value = String(configuration.settings.x);
            const noise = correlation === 0 ? gaussian() : shared * loading(value) * effectOf(experiment.seed) + own * gaussian();
            return { ...experiment, state: "succeeded", score: means[value]! + noise };
          }),
        });
        if (campaignRanking(topic, history)?.comparisons.some((comparison) => comparison.verdict === claim)) any = true;
        step = planNext({ topic, history, usage: { gpuHours: 0, wallTimeMs: 0 } });
      }
      if (any) claimed += 1;
    }
    return claimed / campaigns;
  };
  return { worse: simulate({ a: 0, b: 0, c: 0 }, "worse"), equivalent: simulate({ a: 0, b: -margin }, "equivalent") };
}

const benchmark: Benchmark = {
  title: "Research that reaches right answers (known-answer topics on the embedded engine)",
  async run() {
    const rows: BenchRow[] = [];
    const notes: string[] = [
      `truth: a grid of every value x ${gridSeeds} seeds (1001..), compared with Welch's t against its best (Holm), ties within each topic's margin; campaigns: the heuristic planner from 2 seeds, budget = the grid's run count; goals count every topic (a measurement topic by its "protocol on" campaign); [fresh] topics were added after the planner was tuned`,
    ];
    const verdicts: Verdict[] = [];
    for (const topic of topics.filter((item) => !only || only.includes(item.name))) {
      const started = Date.now();
      const judged = await judgeTopic(topic);
      verdicts.push(...judged);
      for (const verdict of judged) {
        notes.push(
          `${label(verdict)}: campaign ${verdict.answer}; ${verdict.truth}; ${verdict.right ? "RIGHT" : "WRONG"}, ${verdict.decided ? "decided" : "not decided"}; ${verdict.campaignRuns} runs vs grid ${verdict.gridRuns}; ${((Date.now() - started) / 1000).toFixed(0)} s`,
        );
        rows.push({
          name: `${label(verdict)}: right`,
          value: verdict.right ? 1 : 0,
          ...(verdict.variant === "protocol off" ? {} : { goal: `>= ${rightGoal}`, met: verdict.right }),
        });
        rows.push({ name: `${label(verdict)}: decided`, value: verdict.decided ? 1 : 0 });
        rows.push({ name: `${label(verdict)}: compute share of the grid (episodes)`, value: verdict.campaignEpisodes / verdict.gridEpisodes });
      }
    }
    const errors = falseClaimRates(falseClaimCampaigns);
    const correlated = falseClaimRates(falseClaimCampaigns, 0.9);
    const opposed = falseClaimRates(falseClaimCampaigns, -0.45);
    const counted = verdicts.filter((verdict) => verdict.variant !== "protocol off");
    const right = share(counted, (verdict) => verdict.right);
    const decided = share(counted, (verdict) => verdict.decided);
    const compute = computeShare(counted);
    const fresh = counted.filter((verdict) => verdict.fresh);
    const off = verdicts.filter((verdict) => verdict.variant === "protocol off");
    rows.unshift(
      { name: "share of topics answered right", value: right, goal: `>= ${rightGoal}`, met: right >= rightGoal },
      { name: "share of topics decided (separated or tied)", value: decided, goal: `>= ${decidedGoal}`, met: decided >= decidedGoal },
      { name: "campaign compute / grid compute (episodes)", value: compute, goal: `<= ${computeGoal}`, met: compute <= computeGoal },
      // How decidable the topics are at all: the grid spends 1.0 of the compute, unpaired.
      { name: `share of topics the grid itself decides (${gridSeeds} seeds a value, Welch)`, value: share(counted, (verdict) => verdict.gridDecided) },
      ...(fresh.length > 0
        ? [
            { name: "fresh topics: share answered right", value: share(fresh, (verdict) => verdict.right) },
            { name: "fresh topics: share decided", value: share(fresh, (verdict) => verdict.decided) },
            { name: "fresh topics: compute / grid compute", value: computeShare(fresh) },
          ]
        : []),
      ...(off.length > 0
        ? [
            { name: "protocol off (informational): share answered right", value: share(off, (verdict) => verdict.right) },
            { name: "protocol off (informational): share decided", value: share(off, (verdict) => verdict.decided) },
            { name: "protocol off (informational): compute / grid compute", value: computeShare(off) },
          ]
        : []),
      { name: "grid seeds per value", value: gridSeeds },
      { name: "simulated: campaigns with a false 'worse' claim (no difference)", value: errors.worse, goal: "<= 0.05", met: errors.worse <= 0.05 },
      {
        name: "simulated: campaigns with a false 'equivalent' claim (difference = margin)",
        value: errors.equivalent,
        goal: "<= 0.05",
        met: errors.equivalent <= 0.05,
      },
      ...[
        { name: "seeds correlated 0.9", rates: correlated },
        { name: "seeds correlated -0.45 (the last configuration opposed)", rates: opposed },
      ].flatMap(({ name, rates }) => [
        { name: `simulated, ${name}: campaigns with a false 'worse' claim`, value: rates.worse, goal: "<= 0.05", met: rates.worse <= 0.05 },
        { name: `simulated, ${name}: campaigns with a false 'equivalent' claim`, value: rates.equivalent, goal: "<= 0.05", met: rates.equivalent <= 0.05 },
      ]),
    );
    return { title: benchmark.title, rows, notes };
  },
};

export default benchmark;
