import compassWalk from "../examples/tasks/compass-walk/task.ts";
import { defaultOptimizer, trainInProcess, type InProcessTrainingOptions } from "../examples/tasks/in-process-training.ts";
import itemColor from "../examples/tasks/item-color/task.ts";
import type { SwarmTask, TaskInstance } from "../examples/tasks/task-types.ts";
import { summarizeConfigurations } from "../leader/domain/configurations.ts";
import { decideEarlyStops, rungStep, type EarlyStopRule } from "../leader/domain/early-stop.ts";
import { rankAgainstIncumbent } from "../leader/domain/incumbent.ts";
import type { ExperimentOutcome, PlannerStep, StageRecord } from "../leader/domain/planner.ts";
import { summarizeCurve } from "../leader/domain/statistics.ts";
import { parseTopic } from "../leader/domain/topic.ts";
import { planNext } from "../leader/planners/heuristic/heuristic-planner.ts";
import type { Benchmark, BenchRow } from "./report.ts";

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

type Task = SwarmTask<TaskInstance>;

interface KnownAnswerTopic {
  name: string;
  question: string;
  knob: string;
  /** The first is the baseline. */
  values: string[];
  goal: "maximize" | "minimize";
  range: [number, number];
  equivalence: number;
  /** Successive halving within screen and refine stages, as the topic's `early_stop`. */
  earlyStop?: EarlyStopRule;
  /** One run: its score and the rollout episodes it consumed (and its curve, for early stopping). */
  run(value: string, seed: number): Promise<RunResult>;
}

interface RunResult {
  score: number;
  episodes: number;
  /** The per-step reward and the episodes played up to each step; maxSteps as planned. */
  curve?: { rewards: number[]; episodesByStep: number[]; maxSteps: number };
}

const base = { steps: 20, batchSize: 8, numRepeat: 8, strategy: "episodes", optimizer: defaultOptimizer } as const;

/** The mean reward over training (the area under the per-step curve over its span), as the leader's `score: area`. */
function area(curve: readonly number[]): number {
  return summarizeCurve(
    curve.map((value, index) => ({ step: index + 1, value })),
    "maximize",
  ).normalizedArea!;
}

async function areaRun(task: Task, options: Partial<InProcessTrainingOptions>, seed: number): Promise<RunResult> {
  const result = await trainInProcess({ ...base, task, seed, ...options });
  return {
    score: area(result.rewardCurve),
    episodes: result.episodes,
    curve: { rewards: result.rewardCurve, episodesByStep: result.episodesByStep, maxSteps: options.steps ?? base.steps },
  };
}

/** What the bench's area topics declare: successive halving at a quarter and half of each run. */
const halving: EarlyStopRule = { rungs: [0.25, 0.5], keep: 0.5, window: 3 };

const episodesBudget = base.steps * base.batchSize * base.numRepeat;

const topics: KnownAnswerTopic[] = [
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
];

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

interface Verdict {
  topic: string;
  right: boolean;
  decided: boolean;
  answer: string;
  truth: string;
  campaignEpisodes: number;
  gridEpisodes: number;
  campaignRuns: number;
  gridRuns: number;
}

async function judgeTopic(topic: KnownAnswerTopic): Promise<Verdict> {
  // The truth: every value with gridSeeds seeds, as one "stage" the leader's statistics read.
  const gridOutcomes: ExperimentOutcome[] = [];
  let gridEpisodes = 0;
  for (const value of topic.values) {
    for (let index = 0; index < gridSeeds; index += 1) {
      const seed = 1001 + index;
      const { score, episodes } = await topic.run(value, seed);
      gridEpisodes += episodes;
      gridOutcomes.push({ blueprintId: `grid-${value}-${seed}`, configurationId: value, seed, state: "succeeded", score });
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

  // The campaign: the planner's own decisions over fresh runs.
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
      runs.push({ experiment, result: await topic.run(String(configuration.settings[topic.knob]), experiment.seed) });
    }
    // Early stopping acts where the leader applies it (screen and refine stages), on the
    // same rule; a cut run consumed the episodes up to its rung's step.
    const cuts = parsed.earlyStop && plan.kind !== "replicate" ? simulateEarlyStops(runs, parsed.earlyStop, parsed.metric!) : new Map<string, number>();
    const outcomes: ExperimentOutcome[] = [];
    for (const { experiment, result } of runs) {
      const cutAt = cuts.get(experiment.blueprintId);
      campaignEpisodes += cutAt === undefined ? result.episodes : result.curve!.episodesByStep[cutAt - 1]!;
      outcomes.push(
        cutAt === undefined ? { ...experiment, state: "succeeded", score: result.score } : { ...experiment, state: "stopped_early", score: undefined },
      );
    }
    trace.push(`s${plan.stage} ${plan.kind} ${plan.experiments.length}${cuts.size > 0 ? ` (${cuts.size} cut)` : ""}`);
    history.push({ plan, outcomes });
    step = planNext({ topic: parsed, history, usage: { gpuHours: 0, wallTimeMs: 0 } });
  }
  const summaries = summarizeConfigurations(history);
  const ranking = rankAgainstIncumbent(summaries, parsed.metric!);
  const named = ranking
    ? [
        ranking.incumbent,
        ...summaries.filter((summary) => ranking.comparisons.some((row) => row.otherId === summary.configuration.id && row.verdict === "equivalent")),
      ]
    : [];
  const namedValues = named.map((summary) => String(summary.configuration.settings[topic.knob]));
  const right = namedValues.length > 0 && namedValues.every((value) => tiedWithBest.has(value));
  return {
    topic: topic.name,
    right,
    decided: step.reason === "separated" || step.reason === "equivalent",
    answer: `${step.reason}: ${namedValues.join(" = ")} [${trace.join(", ")}]`,
    truth: `grid best ${grid.incumbent.configuration.id} (${grid.status}); tied with it: ${[...tiedWithBest].join(", ")}`,
    campaignEpisodes,
    gridEpisodes,
    campaignRuns: history.reduce((sum, record) => sum + record.plan.experiments.length, 0),
    gridRuns: gridOutcomes.length,
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
): Map<string, number> {
  const stoppedAt = new Map<string, { rung: number; step: number }>();
  for (const [index, fraction] of rule.rungs.entries()) {
    const view = runs.flatMap(({ experiment, result }) => {
      if (!result.curve) return [];
      const cut = stoppedAt.get(experiment.blueprintId);
      const shownTo = cut?.step ?? Math.min(result.curve.rewards.length, rungStep(fraction, result.curve.maxSteps));
      return [
        {
          blueprintId: experiment.blueprintId,
          configurationId: experiment.configurationId,
          live: cut === undefined,
          maxSteps: result.curve.maxSteps,
          lastStep: shownTo,
          points: result.curve.rewards.slice(0, shownTo).map((value, step) => ({ step: step + 1, value })),
          ...(cut === undefined ? {} : { stoppedAtRung: cut.rung }),
        },
      ];
    });
    for (const stop of decideEarlyStops(view, rule, metric).stops)
      if (stop.rung === index + 1) stoppedAt.set(stop.blueprintId, { rung: stop.rung, step: stop.rungStep });
  }
  return new Map([...stoppedAt].map(([blueprintId, cut]) => [blueprintId, cut.step]));
}

const benchmark: Benchmark = {
  title: "Research that reaches right answers (known-answer topics on the embedded engine)",
  async run() {
    const rows: BenchRow[] = [];
    const notes: string[] = [
      `truth: a grid of every value x ${gridSeeds} seeds (1001..), compared with Welch's t against its best (Holm), ties within each topic's margin; campaigns: the heuristic planner from 2 seeds, budget = the grid's run count`,
    ];
    const verdicts: Verdict[] = [];
    for (const topic of topics.filter((item) => !only || only.includes(item.name))) {
      const started = Date.now();
      const verdict = await judgeTopic(topic);
      verdicts.push(verdict);
      notes.push(
        `${verdict.topic}: campaign ${verdict.answer}; ${verdict.truth}; ${verdict.right ? "RIGHT" : "WRONG"}; ${verdict.campaignRuns} runs vs grid ${verdict.gridRuns}; ${((Date.now() - started) / 1000).toFixed(0)} s`,
      );
      rows.push({ name: `${verdict.topic}: compute share of the grid (episodes)`, value: verdict.campaignEpisodes / verdict.gridEpisodes });
    }
    const right = verdicts.filter((verdict) => verdict.right).length / Math.max(1, verdicts.length);
    const compute =
      verdicts.reduce((sum, verdict) => sum + verdict.campaignEpisodes, 0) /
      Math.max(
        1,
        verdicts.reduce((sum, verdict) => sum + verdict.gridEpisodes, 0),
      );
    rows.unshift(
      { name: "share of topics answered right", value: right, goal: ">= 0.9", met: right >= 0.9 },
      { name: "campaign compute / grid compute (episodes)", value: compute, goal: "<= 0.5", met: compute <= 0.5 },
      { name: "share of topics decided (separated or tied)", value: verdicts.filter((verdict) => verdict.decided).length / Math.max(1, verdicts.length) },
      { name: "grid seeds per value", value: gridSeeds },
    );
    return { title: benchmark.title, rows, notes };
  },
};

export default benchmark;
