import { seedScores, type SeedScores } from "../domain/configurations.ts";
import { alpha, holmAdjust, holmIntervalLevel, seedsToSeparate, seedsToShowEquivalence } from "../domain/comparisons.ts";
import { judgeContrasts, type ContrastMember, type ContrastVerdict, type MemberVerdict } from "../domain/contrast-verdicts.ts";
import { followUpPower, pooledStd } from "../domain/follow-up.ts";
import { rankAgainstIncumbent, type IncumbentComparison, type IncumbentRanking } from "../domain/incumbent.ts";
import type { ConfigurationSummary, StageRecord } from "../domain/planner.ts";
import { parseQuestion, type Contrast } from "../domain/question.ts";
import type { LookLevel } from "../domain/sequential-design.ts";
import type { Topic, TopicMetric } from "../domain/topic.ts";
import { campaignRanking, currentLook } from "../planners/heuristic/heuristic-planner.ts";

/**
 * The report's statistics are the planner's at the campaign's last look, so a difference
 * has one interval and one verdict wherever it is shown (answer, comparison table, contrasts,
 * write-up, stage analysis): the incumbent's comparisons are `campaignRanking` (the ranking
 * the heuristic planner stopped or went on from), and the question's contrasts against the
 * baseline are tested the same way: at the look's level (`currentLook`, the sequential
 * design's), paired by seed where the two sides share enough seeds and Welch's t otherwise
 * (the rule of domain/incumbent.ts, by running it on the pair), Holm over the contrasts'
 * family, each interval Holm-adjusted at that level so that it excludes 0 exactly when the
 * verdict is beyond seed noise. Pure.
 */
export interface ReportStatistics {
  look: LookLevel;
  ranking: IncumbentRanking | undefined;
  contrasts: LookContrastVerdict[];
}

/** A contrast member with the pairing its test used (as IncumbentComparison.matched). */
export interface LookContrastMember extends ContrastMember {
  matched?: IncumbentComparison["matched"];
}

export interface LookContrastVerdict extends ContrastVerdict {
  members: LookContrastMember[];
  lead: LookContrastMember | undefined;
}

export function reportStatistics(topic: Topic, history: readonly StageRecord[], summaries: ConfigurationSummary[]): ReportStatistics {
  const look = currentLook(topic, history);
  const metric = topic.metric;
  if (!metric) return { look, ranking: undefined, contrasts: [] };
  return {
    look,
    ranking: campaignRanking(topic, history),
    contrasts: judgeContrastsAtLook(parseQuestion(topic).contrasts, summaries, metric, look.level, seedScores(history)),
  };
}

/** Fewest shared seeds a comparison is paired on (domain/incumbent.ts's rule, stated in the method line). */
export const minimumPairedSeeds = 4;

type Metric = Pick<TopicMetric, "goal"> & { range?: [number, number]; equivalence?: number };

/**
 * The question's contrasts (which configurations belong to which, and the baseline, as
 * domain/contrast-verdicts.ts chooses them) tested at `level` with the planner's pairing.
 */
export function judgeContrastsAtLook(
  contrasts: readonly Contrast[],
  summaries: readonly ConfigurationSummary[],
  metric: Metric,
  level: number,
  scores: SeedScores,
): LookContrastVerdict[] {
  const nominal = judgeContrasts(contrasts, summaries, metric);
  const byId = (id: string | undefined): ConfigurationSummary | undefined => summaries.find((summary) => summary.configuration.id === id);
  const sign = metric.goal === "maximize" ? 1 : -1;
  const pairs = nominal.flatMap((verdict) =>
    verdict.members.map((member) => ({ member, summary: byId(member.configurationId)!, baseline: byId(verdict.baselineId) })),
  );
  const first = pairs.map((pair) => (pair.baseline ? pairComparison(pair.summary, pair.baseline, metric, level, scores) : undefined));
  const pHolm = holmAdjust(first.map((item) => item?.row.p));
  const tostHolm = holmAdjust(first.map((item) => item?.row.equivalenceP));
  const family = pHolm.filter((p) => p !== undefined).length;
  const judged = pairs.map((pair, index): LookContrastMember => {
    const test = first[index];
    if (!test || test.row.p === undefined)
      return {
        ...pair.member,
        low: undefined,
        high: undefined,
        level: 1 - level,
        p: undefined,
        pHolm: undefined,
        equivalencePHolm: undefined,
        verdict: "undecidable",
      };
    // Tested again at the level its Holm step tests at: a family of one shows the interval at 1 − that level.
    const intervalLevel = holmIntervalLevel(test.row.p, pHolm[index], family, level);
    const shown = pairComparison(pair.summary, pair.baseline!, metric, 1 - intervalLevel, scores)!;
    const difference = test.memberLeads ? sign * test.row.advantage : -sign * test.row.advantage;
    const advantage = sign * difference;
    const interval = shown.row.low === undefined ? undefined : memberInterval(shown.row.low, shown.row.high!, sign, shown.memberLeads);
    const verdict: MemberVerdict =
      tostHolm[index] !== undefined && tostHolm[index]! < level ? "equivalent" : pHolm[index]! < level ? (advantage > 0 ? "better" : "worse") : "open";
    const { settle: _nominalSettle, ...member } = pair.member;
    return {
      ...member,
      difference,
      advantage,
      low: interval?.[0],
      high: interval?.[1],
      level: intervalLevel,
      p: test.row.p,
      pHolm: pHolm[index],
      equivalencePHolm: tostHolm[index],
      verdict,
      ...(test.row.matched ? { matched: test.row.matched } : {}),
    };
  });
  const openCount = judged.filter((member) => member.verdict === "open" || member.verdict === "undecidable").length;
  let next = 0;
  return nominal.map((verdict) => {
    const baseline = byId(verdict.baselineId);
    const members = verdict.members.map(() => {
      const member = judged[next]!;
      const summary = pairs[next++]!.summary;
      return member.verdict === "open" && baseline ? { ...member, settle: settleMember(member, [summary, baseline], metric.equivalence, openCount) } : member;
    });
    return { ...verdict, members, ...answerOf(verdict.contrast, members) };
  });
}

/** The member against the baseline through the incumbent's rule (domain/incumbent.ts): paired, guarded or Welch. */
function pairComparison(
  member: ConfigurationSummary,
  baseline: ConfigurationSummary,
  metric: Metric,
  level: number,
  scores: SeedScores,
): { row: IncumbentComparison; memberLeads: boolean } | undefined {
  const ranking = rankAgainstIncumbent([member, baseline], metric, level, scores);
  const row = ranking?.comparisons[0];
  return ranking && row ? { row, memberLeads: ranking.incumbent === member } : undefined;
}

/** The interval of member − baseline from the incumbent's advantage interval (positive = better for the goal). */
function memberInterval(low: number, high: number, sign: number, memberLeads: boolean): [number, number] {
  // incumbent − other, in raw units.
  const [rawLow, rawHigh] = sign > 0 ? [low, high] : [-high, -low];
  return memberLeads ? [rawLow, rawHigh] : [-rawHigh, -rawLow];
}

/** Seeds per side at 80% power that would settle an open member (as domain/contrast-verdicts.ts sizes them). */
function settleMember(member: LookContrastMember, pair: ConfigurationSummary[], equivalence: number | undefined, openCount: number): ContrastMember["settle"] {
  // Sides that share seeds are sized on their seed-matched differences, as domain/follow-up.ts sizes the incumbent's.
  const std = member.matched ? member.matched.differenceStd / Math.SQRT2 : pooledStd(pair);
  if (std === undefined) return undefined;
  const significance = alpha / Math.max(1, openCount);
  const separate = seedsToSeparate(Math.abs(member.difference), std, followUpPower, significance);
  const same = equivalence === undefined ? Number.POSITIVE_INFINITY : seedsToShowEquivalence(member.difference, equivalence, std, followUpPower, significance);
  return same < separate ? { seedsPerSide: same, kind: "equivalence" } : { seedsPerSide: separate, kind: "separate" };
}

/** The contrast's answer from its members' verdicts, by the rules of domain/contrast-verdicts.ts. */
function answerOf(contrast: Contrast, members: LookContrastMember[]): { answer: ContrastVerdict["answer"]; lead: LookContrastMember | undefined } {
  const affirms = (verdict: MemberVerdict): boolean =>
    contrast.ask === "helps" ? verdict === "better" : contrast.ask === "hurts" ? verdict === "worse" : verdict === "better" || verdict === "worse";
  const denies = (verdict: MemberVerdict): boolean =>
    verdict === "equivalent" || (contrast.ask === "helps" && verdict === "worse") || (contrast.ask === "hurts" && verdict === "better");
  const towardAsk = (member: ContrastMember): number =>
    contrast.ask === "hurts" ? -member.advantage : contrast.ask === "helps" ? member.advantage : Math.abs(member.advantage);
  const byAsk = [...members].sort((left, right) => towardAsk(right) - towardAsk(left));
  const yes = byAsk.find((member) => affirms(member.verdict));
  if (yes) return { answer: "yes", lead: yes };
  if (members.length > 0 && members.every((member) => member.verdict === "equivalent")) return { answer: "equivalent", lead: byAsk[0] };
  if (members.length > 0 && members.every((member) => denies(member.verdict))) return { answer: "no", lead: byAsk[0] };
  return { answer: "not decided", lead: byAsk.find((member) => member.verdict === "open" || member.verdict === "undecidable") ?? byAsk[0] };
}
