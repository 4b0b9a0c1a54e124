import { parseDuration } from "../../../core/duration.ts";
import {
  baselineSettings,
  bestConfiguration,
  blueprintIdOf,
  formatNumber,
  isBetter,
  makeConfiguration,
  seedScores,
  summarizeConfigurations,
  type Goal,
} from "../../domain/configurations.ts";
import { followUps, seedsToAdd } from "../../domain/follow-up.ts";
import { rankAgainstIncumbent, type IncumbentComparison, type IncumbentRanking } from "../../domain/incumbent.ts";
import { mergeBounds, type KnobBound } from "../../domain/knob-bounds.ts";
import { scoreLabel } from "../../domain/score-label.ts";
import { designText, lookLevels, spentAlpha, type LookLevel } from "../../domain/sequential-design.ts";
import type { ConfigurationSummary, PlannedConfiguration, Planner, PlannerInput, PlannerStep, StagePlan, StageRecord } from "../../domain/planner.ts";
import { applyInstructions } from "./instructions.ts";
import { refinementCandidates } from "./refinement.ts";
import { heuristicNeeds, type Topic, type TopicMetric } from "../../domain/topic.ts";

/**
 * The deterministic planner. Stage 1 screens: the baseline (each knob at its first value)
 * and one factor at a time (each other value of each knob, the rest at baseline). After
 * each stage it compares the best mean so far (the incumbent) with every other
 * configuration (Welch's t, Holm-corrected over the comparisons, TOST against the topic's
 * `metric.equivalence`; domain/incumbent.ts) and decides, in this order:
 *
 * 1. the topic lacks what it needs (metric, base experiment, knobs): stop, saying what to add;
 * 2. no experiment of the last stage produced a score: stop with the failures;
 * 3. the incumbent is separated from every other: refine around it once
 *    (leader/planners/heuristic/refinement.ts, inside the knobs' bounds), then stop
 *    (`separated`);
 * 4. the rest are worse or the same within the margin: stop (`equivalent`, a tie is an answer);
 * 5. contenders are still open: replicate, a race of one seed per stage among the incumbent
 *    and the open contenders only (the clearly worse drop out), each comparison's seed going
 *    to the side whose spread it shrinks most (domain/follow-up.ts); seed numbers continue
 *    where each configuration's stopped; unless every open comparison needs more than twice
 *    the experiments left (futility: stop `budget` now, saying what would settle it);
 * 6. a single-seed topic (no variance to race on) refines instead, and stops when a
 *    refinement stage brings no improvement or nothing is left to try; a separated winner is
 *    refined around only when a stage would be left to replicate what that finds;
 * 7. the next stage would exceed a budget: stop (`budget`), saying which comparisons are open.
 *
 * Steps 3 to 5 judge at the look's level of the campaign's sequential design
 * (domain/sequential-design.ts: 0.05 spent over the looks, so the chance of any false claim
 * over the campaign stays at about 0.05 however many stages run), and pair every comparison
 * whose sides ran the same seeds (domain/incumbent.ts: the paired t on seed-matched
 * differences, fixed by the design before any data; a race then gives each seed to both
 * sides of a comparison).
 *
 * A refinement that does not fit the experiment budget whole is cut to the configurations
 * that fit; a replication that does not fit stops. Same input, same output: no clock, no
 * randomness.
 */
export class HeuristicPlanner implements Planner {
  readonly name = "heuristic";

  async next(input: PlannerInput): Promise<PlannerStep> {
    return planNext(input);
  }
}

export function planNext(input: PlannerInput): PlannerStep {
  const reviewed = applyInstructions(input.topic, input.instructions);
  const step = planWithTopic({ ...input, topic: reviewed.topic });
  if (step.kind === "stop" || (reviewed.applied.length === 0 && reviewed.notUnderstood.length === 0)) return step;
  const notes = [
    ...(reviewed.applied.length > 0 ? [`reviewer instructions applied: ${reviewed.applied.join("; ")}`] : []),
    ...(reviewed.notUnderstood.length > 0
      ? [
          `not understood by the heuristic planner (it takes "seeds=N" and "drop <knob>=<value>"; the llm planner reads text): ${reviewed.notUnderstood.join("; ")}`,
        ]
      : []),
  ];
  return { ...step, plan: { ...step.plan, rationale: `${step.plan.rationale}; ${notes.join("; ")}` } };
}

function planWithTopic(input: PlannerInput): PlannerStep {
  const { topic, history } = input;
  const needs = heuristicNeeds(topic);
  if (needs.length > 0) {
    return stop("needs-input", `the heuristic planner cannot plan "${topic.title}" yet: ${needs.join("; ")}`, undefined, { needs });
  }
  const metric = topic.metric!;
  const goal = metric.goal;
  if (history.length === 0) return checkBudgets(input, screenStage(topic, metric), undefined, []);
  const summaries = summarizeConfigurations(history);
  const best = bestConfiguration(summaries, goal);
  const stageNumber = history.length + 1;
  const last = history[history.length - 1]!;
  const scored = last.outcomes.filter((outcome) => outcome.state === "succeeded" && outcome.score !== undefined);
  if (scored.length === 0 || !best) {
    const reasons = last.outcomes.map((outcome) => `${outcome.blueprintId}: ${outcome.state}${outcome.reason ? ` (${outcome.reason})` : ""}`);
    return stop("stage-failed", `no experiment of stage ${last.plan.stage} recorded a score of ${metric.name}`, best, { failures: reasons });
  }
  const look = currentLook(topic, history);
  const ranking = rankAgainstIncumbent(summaries, metric, look.level, seedScores(history))!;
  const evidence = { ...evidenceOf(summaries, ranking), look };
  const bounds = mergeBounds(input.engineBounds, sourced(topic.knobRanges, "the topic"));

  // (a) The best is separated from the rest: refine around it once, then stop.
  if (ranking.status === "separated") {
    const separated = stop("separated", separatedText(ranking, metric, look), best, evidence);
    if (history.some((record) => record.plan.kind === "refine" && record.plan.around === best.configuration.id)) return separated;
    // New values come with the topic's few seeds and rarely separate at once: refining pays
    // only when a stage is left to replicate what it finds (else the answer would end open).
    if (topic.seeds >= 2 && stageNumber + 1 > topic.budgets.stages)
      return stop(
        "separated",
        `${separatedText(ranking, metric, look)}; not refined around: the stage budget (${topic.budgets.stages}) leaves no stage to replicate what a refinement would find`,
        best,
        evidence,
      );
    const plan = refineStage(topic, metric, stageNumber, summaries, best, bounds);
    if (plan.configurations.length === 0) return separated;
    const step = checkBudgets(input, plan, best, summaries, ranking);
    return step.kind === "stop" ? separated : step;
  }
  // (c) A tie within the margin is the answer.
  if (ranking.status === "tied") return stop("equivalent", tiedText(ranking, metric, look), best, evidence);

  // (b) Contenders not separated: more seeds for them (those clearly worse drop out), when
  // the topic runs more than one seed (a single-seed topic gives no variance to size from).
  if (topic.seeds >= 2 && ranking.status === "open") {
    const futile = futility(topic, history, summaries, ranking, look);
    if (futile) return stop("budget", futile, best, evidence);
    const plan = replicationStage(metric, stageNumber, summaries, ranking, history, look, topic);
    if (plan) return checkBudgets(input, plan, best, summaries, ranking);
  }

  // Single-seed topics, and nothing to replicate: refinement as before.
  if (history.length >= 2 && last.plan.kind === "refine") {
    const earlier = summarizeConfigurations(history.slice(0, -1));
    const earlierBest = bestConfiguration(earlier, goal);
    const lastIds = new Set(last.plan.configurations.map((configuration) => configuration.id));
    const lastBest = bestConfiguration(
      summaries.filter((summary) => lastIds.has(summary.configuration.id) && summary.stage === last.plan.stage),
      goal,
    );
    if (earlierBest && (!lastBest || !isBetter(lastBest.sample.mean, earlierBest.sample.mean, goal))) {
      return stop(
        "no-improvement",
        `stage ${last.plan.stage} brought no improvement: its best ${lastBest ? `${lastBest.configuration.id} (mean ${formatNumber(lastBest.sample.mean)})` : "(none)"} does not beat ${earlierBest.configuration.id} (mean ${formatNumber(earlierBest.sample.mean)})`,
        best,
        evidence,
      );
    }
  }
  const plan = refineStage(topic, metric, stageNumber, summaries, best, bounds);
  if (plan.configurations.length === 0)
    return stop("exhausted", `nothing left to try around ${best.configuration.id}: every candidate was measured`, best, evidence);
  return checkBudgets(input, plan, best, summaries, ranking);
}

function sourced(ranges: Topic["knobRanges"], source: string): Record<string, KnobBound> {
  return Object.fromEntries(Object.entries(ranges ?? {}).map(([name, range]) => [name, { ...range, source }]));
}

/** "X (mean m, 95% interval [l, h])" */
function described(summary: ConfigurationSummary): string {
  return `${summary.configuration.id} (mean ${formatNumber(summary.sample.mean)}, 95% interval ${interval(summary)})`;
}

function comparisonText(comparison: IncumbentComparison): string {
  const range =
    comparison.low === undefined
      ? ""
      : `, Holm-adjusted ${formatNumber(comparison.level * 100)}% interval [${formatNumber(comparison.low)}, ${formatNumber(comparison.high)}]`;
  const p = comparison.pHolm === undefined ? "" : `, Holm-adjusted p ${formatNumber(comparison.pHolm)}`;
  return `${comparison.otherId} by ${formatNumber(comparison.advantage)}${range}${p}`;
}

/**
 * The look the last stage's analysis is, in the campaign's sequential design
 * (domain/sequential-design.ts): its information (experiments run over the budget) and the
 * level its tests are held to.
 */
export function currentLook(topic: Topic, history: readonly StageRecord[]): LookLevel {
  let run = 0;
  const cumulative = history.map((record) => (run += record.plan.experiments.length));
  return lookLevels(cumulative, topic.budgets.experiments).at(-1) ?? lookLevels([0], topic.budgets.experiments)[0]!;
}

/**
 * The level the next look's tests will be held to, estimated for a next stage as large as
 * the last one (the replication is sized with it before its own size is known).
 */
function nextLevel(topic: Topic, history: readonly StageRecord[], look: LookLevel): number {
  const lastSize = history.at(-1)?.plan.experiments.length ?? 0;
  const next = Math.min(1, look.information + lastSize / Math.max(1, topic.budgets.experiments));
  return Math.max(0, spentAlpha(next) - look.spent);
}

/** The incumbent's comparisons as the planner judges them at the campaign's last look (what a stop claims). */
export function campaignRanking(topic: Topic, history: readonly StageRecord[]): IncumbentRanking | undefined {
  if (!topic.metric || history.length === 0) return undefined;
  return rankAgainstIncumbent(summarizeConfigurations([...history]), topic.metric, currentLook(topic, history).level, seedScores(history));
}

function separatedText(ranking: IncumbentRanking, metric: TopicMetric, look: LookLevel): string {
  const runnerUp = ranking.runnerUp!;
  return `${described(ranking.incumbent)} is better than every other configuration beyond seed noise (Welch's t, Holm-corrected over ${ranking.comparisons.length} comparison(s) at this look's level; ${designText(look)}); it leads the runner-up ${comparisonText(runnerUp)}${metric.equivalence === undefined ? "" : `, more than the equivalence margin ${formatNumber(metric.equivalence)}`}`;
}

function tiedText(ranking: IncumbentRanking, metric: TopicMetric, look: LookLevel): string {
  const tied = ranking.comparisons.filter((comparison) => comparison.verdict === "equivalent");
  const worse = ranking.comparisons.filter((comparison) => comparison.verdict === "worse");
  return `${described(ranking.incumbent)} and ${tied.map((comparison) => comparison.otherId).join(", ")} are the same within the equivalence margin ${formatNumber(metric.equivalence)} (two one-sided tests, Holm-corrected at this look's level; ${designText(look)})${worse.length > 0 ? `; ${worse.map((comparison) => comparison.otherId).join(", ")} ${worse.length === 1 ? "is" : "are"} worse beyond seed noise` : ""}`;
}

/**
 * Most seeds one replication stage adds to a configuration: a race goes one seed at a time,
 * so a comparison that settles early stops early, and the sequential design's next look
 * comes as soon as it can (domain/sequential-design.ts: a look one seed later costs little
 * of the error). Two a stage was measured on bench/research.bench.ts to cost more episodes
 * for the same answers; the price of one is more, smaller stages (wall time).
 */
const maxSeedsAddedPerStage = 1;

/**
 * Futility: when every open comparison would need more than twice the experiments left
 * (at the seed noise measured so far), spending them cannot be expected to settle the
 * question; stop now and say what would. Twice, because a two- or three-seed estimate of
 * the noise is itself rough. Undefined when some comparison could still be settled.
 */
function futility(topic: Topic, history: StageRecord[], summaries: ConfigurationSummary[], ranking: IncumbentRanking, look: LookLevel): string | undefined {
  const used = history.reduce((sum, record) => sum + record.plan.experiments.length, 0);
  const room = topic.budgets.experiments - used;
  const countOf = (id: string): number => summaries.find((summary) => summary.configuration.id === id)?.sample.n ?? 0;
  // Whether the budget could settle it at all: the error left to spend, as if in one last look.
  const plans = followUps(ranking, summaries, topic.metric!.equivalence, Math.max(0, spentAlpha(1) - look.spent));
  if (plans.length === 0) return undefined;
  const needs = plans.map((plan) =>
    Number.isFinite(plan.seedsPerSide)
      ? Math.max(0, plan.seedsPerSide - countOf(ranking.incumbent.configuration.id)) + Math.max(0, plan.seedsPerSide - countOf(plan.otherId))
      : Number.POSITIVE_INFINITY,
  );
  if (needs.some((need) => need <= 2 * room)) return undefined;
  const cheapest = Math.min(...needs);
  return `the ${Math.max(0, room)} experiment(s) left of the budget of ${topic.budgets.experiments} cannot be expected to settle any open comparison: the cheapest needs ${Number.isFinite(cheapest) ? `${cheapest} more run(s)` : "more seeds than any budget (the means are equal; declare metric.equivalence to let a tie be shown)"} at the seed noise measured so far; still open: ${ranking.incumbent.configuration.id} against ${ranking.comparisons
    .filter((comparison) => comparison.verdict === "open" || comparison.verdict === "undecidable")
    .map(comparisonText)
    .join("; ")}`;
}

function replicationStage(
  metric: TopicMetric,
  stage: number,
  summaries: ConfigurationSummary[],
  ranking: IncumbentRanking,
  history: StageRecord[],
  look: LookLevel,
  topic: Topic,
): StagePlan | undefined {
  const plans = followUps(ranking, summaries, metric.equivalence, nextLevel(topic, history, look));
  const additions = seedsToAdd(ranking, summaries, plans, maxSeedsAddedPerStage);
  if (additions.length === 0) return undefined;
  const scoreName = scoreLabel(metric);
  const incumbent = ranking.incumbent;
  const runnerUp = ranking.runnerUp!;
  const hypothesis = `H${stage}-replicate`;
  const dropped = ranking.comparisons.filter((comparison) => comparison.verdict === "worse").map((comparison) => comparison.otherId);
  const tied = ranking.comparisons.filter((comparison) => comparison.verdict === "equivalent").map((comparison) => comparison.otherId);
  const configurations: PlannedConfiguration[] = additions.map(({ id, add }) => {
    const summary = summaries.find((item) => item.configuration.id === id)!;
    const plan = plans.find((item) => item.otherId === id);
    const why =
      id === incumbent.configuration.id
        ? `the incumbent, compared with each contender`
        : plan && Number.isFinite(plan.seedsPerSide)
          ? plan.kind === "separate"
            ? `${plan.seedsPerSide} seeds a side would separate a difference of ${formatNumber(plan.size)} from ${incumbent.configuration.id} with 80% power`
            : `${plan.seedsPerSide} seeds a side would show it the same as ${incumbent.configuration.id} within ${formatNumber(plan.size)} with 80% power`
          : `its comparison with ${incumbent.configuration.id} needs a variance estimate`;
    return {
      id: summary.configuration.id,
      settings: summary.configuration.settings,
      delta: summary.configuration.delta,
      hypothesis,
      purpose: `replication: ${add} more seed(s) (${summary.sample.n} scored so far): ${why}`,
      prediction:
        id === incumbent.configuration.id
          ? {
              kind: "beats-configuration",
              configurationId: runnerUp.otherId,
              text: `with every seed so far, mean ${scoreName} stays ${betterWord(metric.goal)} than ${runnerUp.otherId}'s`,
            }
          : { kind: "records", text: `the runs record finite values of ${metric.name}` },
    };
  });
  const experiments = configurations.flatMap((configuration) => {
    const add = additions.find((item) => item.id === configuration.id)!.add;
    const first = nextSeed(history, configuration.id);
    return Array.from({ length: add }, (_, index) => ({
      blueprintId: blueprintIdOf(stage, configuration.id, first + index),
      configurationId: configuration.id,
      seed: first + index,
    }));
  });
  return {
    stage,
    kind: "replicate",
    rationale: `replicate before refining: ${incumbent.configuration.id} is not separated from ${plans.map((plan) => plan.otherId).join(", ")}; racing, each comparison's seeds go to the side whose spread they shrink most: ${additions.map((item) => `${item.id} +${item.add}`).join(", ")} (closest: ${comparisonText(runnerUp)}); more seeds go to these contenders only${dropped.length > 0 ? `; dropped as worse beyond seed noise: ${dropped.join(", ")}` : ""}${tied.length > 0 ? `; shown the same as the incumbent within ${formatNumber(metric.equivalence)}: ${tied.join(", ")}` : ""}`,
    hypotheses: [
      {
        id: hypothesis,
        statement: `with more seeds, ${incumbent.configuration.id} is either better than ${plans.map((plan) => plan.otherId).join(", ")} beyond seed noise${metric.equivalence === undefined ? "" : `, or the same within ${formatNumber(metric.equivalence)}`}`,
      },
    ],
    configurations,
    experiments,
    decisions: [
      { outcome: "every experiment of the stage fails or records no score", decision: "stop and report the failures with their reasons" },
      {
        outcome: `${incumbent.configuration.id} (or a new best) is better than every other beyond seed noise`,
        decision: "refine around it once, then stop with it as the answer",
      },
      ...(metric.equivalence === undefined
        ? []
        : [{ outcome: `the contenders are the same within ${formatNumber(metric.equivalence)}`, decision: "stop: they are tied, which answers the question" }]),
      { outcome: "otherwise", decision: `add seeds to the contenders still open in stage ${stage + 1}, if the budgets allow it` },
    ],
  };
}

/** The first seed a configuration has not used in any stage. */
function nextSeed(history: StageRecord[], configurationId: string): number {
  let highest = 0;
  for (const record of history)
    for (const experiment of record.plan.experiments) if (experiment.configurationId === configurationId) highest = Math.max(highest, experiment.seed);
  return highest + 1;
}

function screenStage(topic: Topic, metric: TopicMetric): StagePlan {
  const baseline = baselineSettings(topic.knobs);
  const scoreName = scoreLabel(metric);
  const baselineText = Object.entries(baseline)
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(", ");
  const configurations: PlannedConfiguration[] = [
    {
      ...makeConfiguration(baseline, baseline),
      hypothesis: "H0",
      purpose: `the baseline (${baselineText}): the reference every other configuration of the screen is compared with`,
      prediction:
        metric.reference === undefined
          ? { kind: "records", text: `the runs record finite values of ${metric.name}` }
          : {
              kind: "above-level",
              level: metric.reference,
              text: `mean ${scoreName} ${comparatorWord(metric.goal)} ${formatNumber(metric.reference)} (the reference level)`,
            },
    },
  ];
  const hypotheses = [{ id: "H0", statement: `the baseline (${baselineText}) trains: ${configurations[0]!.prediction.text}` }];
  Object.entries(topic.knobs).forEach(([name, values], index) => {
    const hypothesis = `H${index + 1}`;
    hypotheses.push({
      id: hypothesis,
      statement: `${name} matters: some value other than ${String(values[0])} gives a ${betterWord(metric.goal)} ${scoreName} than the baseline`,
    });
    for (const value of values.slice(1)) {
      const configuration = makeConfiguration({ ...baseline, [name]: value }, baseline);
      if (configurations.some((existing) => existing.id === configuration.id)) continue;
      configurations.push({
        ...configuration,
        hypothesis,
        purpose: `one factor at a time: ${name} ${String(values[0])} → ${String(value)}, every other knob at its baseline value`,
        prediction: {
          kind: "beats-configuration",
          configurationId: "baseline",
          text: `mean ${scoreName} across seeds is ${betterWord(metric.goal)} than the baseline's`,
        },
      });
    }
  });
  return {
    stage: 1,
    kind: "screen",
    rationale: `screen each knob one factor at a time against the baseline, ${topic.seeds} seed(s) per configuration, to find which knobs move ${scoreName}`,
    hypotheses,
    configurations,
    experiments: experimentsOf(1, configurations, topic.seeds),
    decisions: commonDecisions(1, "the baseline"),
  };
}

function refineStage(
  topic: Topic,
  metric: TopicMetric,
  stage: number,
  summaries: ConfigurationSummary[],
  best: ConfigurationSummary,
  bounds: Record<string, KnobBound>,
): StagePlan {
  const baseline = baselineSettings(topic.knobs);
  const scoreName = scoreLabel(metric);
  const hypothesis = `H${stage}-refine`;
  const configurations: PlannedConfiguration[] = refinementCandidates(topic.knobs, summaries, metric.goal, bounds).map((candidate) => ({
    ...makeConfiguration(candidate.settings, baseline),
    hypothesis,
    purpose: candidate.purpose,
    ...(candidate.extrapolation === undefined ? {} : { extrapolation: candidate.extrapolation }),
    prediction: {
      kind: "beats-configuration",
      configurationId: best.configuration.id,
      text: `mean ${scoreName} across seeds is ${betterWord(metric.goal)} than ${best.configuration.id}'s ${formatNumber(best.sample.mean)}`,
    },
  }));
  const extrapolations = configurations.flatMap((configuration) => (configuration.extrapolation === undefined ? [] : [configuration.extrapolation]));
  return {
    stage,
    kind: "refine",
    around: best.configuration.id,
    rationale: `refine around the best so far, ${best.configuration.id} (mean ${formatNumber(best.sample.mean)}, 95% interval ${interval(best)})${extrapolations.length > 0 ? `; EXTRAPOLATES beyond the tested range: ${extrapolations.join("; ")}` : ""}`,
    hypotheses: [
      {
        id: hypothesis,
        statement: `a configuration near ${best.configuration.id} gives a ${betterWord(metric.goal)} ${scoreName} than its ${formatNumber(best.sample.mean)}`,
      },
    ],
    configurations,
    experiments: experimentsOf(stage, configurations, topic.seeds),
    decisions: commonDecisions(stage, best.configuration.id),
  };
}

function commonDecisions(stage: number, reference: string): StagePlan["decisions"] {
  return [
    { outcome: "every experiment of the stage fails or records no score", decision: "stop and report the failures with their reasons" },
    {
      outcome: "the best configuration is better than every other beyond seed noise (Welch's t, Holm-corrected)",
      decision: "stop and report it as the answer (after refining around it once)",
    },
    ...(stage >= 2
      ? [{ outcome: `no configuration of this stage beats ${reference}'s mean`, decision: `stop: refinement brought no improvement; report ${reference}` }]
      : []),
    {
      outcome: "otherwise",
      decision: `add seeds to the contenders not yet separated in stage ${stage + 1} (or, with one seed per configuration, refine around the best), if the budgets allow it`,
    },
  ];
}

function checkBudgets(
  input: PlannerInput,
  plan: StagePlan,
  best: ConfigurationSummary | undefined,
  summaries: ConfigurationSummary[],
  ranking?: IncumbentRanking,
): PlannerStep {
  const step = fitBudgets(input, plan, best, summaries, ranking);
  if (step.kind === "stage" || !ranking) return step;
  // The answer says what a budget stop leaves open.
  const open = ranking.comparisons.filter((comparison) => comparison.verdict === "open" || comparison.verdict === "undecidable");
  if (open.length === 0) return step;
  return { ...step, explanation: `${step.explanation}; still open: ${ranking.incumbent.configuration.id} against ${open.map(comparisonText).join("; ")}` };
}

function fitBudgets(
  input: PlannerInput,
  plan: StagePlan,
  best: ConfigurationSummary | undefined,
  summaries: ConfigurationSummary[],
  ranking: IncumbentRanking | undefined,
): PlannerStep {
  const { topic, history, usage } = input;
  const budgets = topic.budgets;
  const base = topic.base!;
  const evidence = { ...evidenceOf(summaries, ranking), planned: plan.experiments.length };
  if (plan.stage > budgets.stages) return stop("budget", `stage ${plan.stage} would exceed the budget of ${budgets.stages} stage(s)`, best, evidence);
  const used = history.reduce((sum, record) => sum + record.plan.experiments.length, 0);
  const room = budgets.experiments - used;
  // A race adds one seed per configuration a stage: one that does not fit cannot be cut.
  if (plan.kind === "replicate" && plan.experiments.length > room)
    return stop(
      "budget",
      `stage ${plan.stage} needs ${plan.experiments.length} more experiments (one seed per configuration it races) but only ${Math.max(0, room)} of the budget of ${budgets.experiments} remain`,
      best,
      evidence,
    );
  const fitting = plan.kind === "replicate" ? plan.configurations.length : Math.floor(room / topic.seeds);
  if (plan.configurations.length > fitting) {
    if (plan.kind === "screen" || fitting < 1) {
      return stop(
        "budget",
        `stage ${plan.stage} needs ${plan.experiments.length} experiments but only ${Math.max(0, room)} of the budget of ${budgets.experiments} remain`,
        best,
        evidence,
      );
    }
    const kept = plan.configurations.slice(0, fitting);
    plan = {
      ...plan,
      configurations: kept,
      experiments: experimentsOf(plan.stage, kept, topic.seeds),
      rationale: `${plan.rationale}; cut to ${kept.length} configuration(s) to fit the experiment budget`,
    };
  }
  const budgetMs = parseDuration(base.time_budget) ?? 0;
  if (budgets.gpuHours !== undefined) {
    const estimate = (plan.experiments.length * base.gpus * budgetMs) / 3_600_000;
    if (usage.gpuHours + estimate > budgets.gpuHours) {
      return stop(
        "budget",
        `stage ${plan.stage} could use ${formatNumber(estimate)} GPU-hours (its time budgets), over the ${formatNumber(budgets.gpuHours - usage.gpuHours)} left`,
        best,
        { ...evidence, gpuHoursUsed: usage.gpuHours },
      );
    }
  }
  if (budgets.wallTimeMs !== undefined && usage.wallTimeMs + budgetMs > budgets.wallTimeMs) {
    return stop(
      "budget",
      `stage ${plan.stage} could take ${base.time_budget}, over the wall time left (${formatNumber((budgets.wallTimeMs - usage.wallTimeMs) / 60_000)} min)`,
      best,
      { ...evidence, wallTimeUsedMs: usage.wallTimeMs },
    );
  }
  return { kind: "stage", plan };
}

function experimentsOf(stage: number, configurations: PlannedConfiguration[], seeds: number): StagePlan["experiments"] {
  return configurations.flatMap((configuration) =>
    Array.from({ length: seeds }, (_, index) => ({
      blueprintId: blueprintIdOf(stage, configuration.id, index + 1),
      configurationId: configuration.id,
      seed: index + 1,
    })),
  );
}

function stop(
  reason: Extract<PlannerStep, { kind: "stop" }>["reason"],
  explanation: string,
  best: ConfigurationSummary | undefined,
  evidence: Record<string, unknown>,
): PlannerStep {
  return { kind: "stop", reason, explanation, best, evidence };
}

function evidenceOf(summaries: ConfigurationSummary[], ranking?: IncumbentRanking): Record<string, unknown> {
  return {
    configurations: summaries.map((summary) => ({
      id: summary.configuration.id,
      n: summary.sample.n,
      mean: summary.sample.mean,
      low: summary.sample.low,
      high: summary.sample.high,
      failed: summary.failed,
    })),
    ...(ranking
      ? {
          incumbent: ranking.incumbent.configuration.id,
          status: ranking.status,
          comparisons: ranking.comparisons.map((comparison) => ({
            id: comparison.otherId,
            advantage: comparison.advantage,
            low: comparison.low,
            high: comparison.high,
            p: comparison.p,
            pHolm: comparison.pHolm,
            equivalencePHolm: comparison.equivalencePHolm,
            verdict: comparison.verdict,
          })),
        }
      : {}),
  };
}

function interval(summary: ConfigurationSummary): string {
  return summary.sample.low === undefined ? "n/a (one seed)" : `[${formatNumber(summary.sample.low)}, ${formatNumber(summary.sample.high)}]`;
}

function betterWord(goal: Goal): string {
  return goal === "maximize" ? "higher" : "lower";
}

function comparatorWord(goal: Goal): string {
  return goal === "maximize" ? ">" : "<";
}
