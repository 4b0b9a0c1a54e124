import { alpha, holmAdjust, holmIntervalLevel } from "./comparisons.ts";
import type { SeedScores } from "./configurations.ts";
import { matchedSeedStd, pooledStd, seedsToSettle } from "./follow-up.ts";
import { comparePair, type IncumbentComparison } from "./incumbent.ts";
import type { ConfigurationSummary } from "./planner.ts";
import { onContrastSide, type Contrast } from "./question.ts";
import type { KnobValue, TopicMetric } from "./topic.ts";

/**
 * Each contrast of the question (question.ts) judged against the baseline: every measured
 * configuration that differs from the baseline in the contrast's knob alone, on the
 * contrast's side, is compared with the baseline by the incumbent's rule (domain/incumbent.ts:
 * paired by seed from four shared seeds, else Welch's t, and TOST with the topic's margin)
 * at a given level (the campaign's look's: the report passes the planner's); Holm's
 * correction runs over every such comparison of every contrast (one family, the
 * question's), and each interval is Holm-adjusted the same way as the incumbent's
 * (comparisons.ts `holmIntervalLevel`), so an interval excludes 0 exactly when its
 * comparison is beyond seed noise. Pure.
 *
 * The answer per contrast, for "does it help?" (hurt mirrors it; matter takes either way):
 * - yes: some value is better than the baseline beyond seed noise;
 * - equivalent: every value is the same as the baseline within the margin;
 * - no: every value is worse beyond seed noise or the same within the margin;
 * - not decided: otherwise, with the seeds that would settle the open values.
 */
export type ContrastAnswer = "yes" | "no" | "equivalent" | "not decided";
export type MemberVerdict = "better" | "worse" | "equivalent" | "open" | "undecidable";

export interface ContrastMember {
  configurationId: string;
  value: KnobValue;
  n: number;
  mean: number;
  /** mean(member) − mean(baseline) in the metric's units (raw sign). */
  difference: number;
  /** The same, signed so that positive is better for the goal. */
  advantage: number;
  /** Holm-adjusted interval of `difference` at `level`; undefined with fewer than two seeds a side. */
  low: number | undefined;
  high: number | undefined;
  level: number;
  p: number | undefined;
  pHolm: number | undefined;
  equivalencePHolm: number | undefined;
  verdict: MemberVerdict;
  /** Seeds per side at 80% power that would settle an open member, and what they would show. */
  settle?: { seedsPerSide: number; kind: "separate" | "equivalence" };
  /** Set when the two sides share seeds: the comparison's pairing (as IncumbentComparison.matched). */
  matched?: IncumbentComparison["matched"];
}

export interface ContrastVerdict {
  contrast: Contrast;
  baselineId: string | undefined;
  baselineN: number;
  answer: ContrastAnswer;
  members: ContrastMember[];
  /** The member the answer's sentence is about (the strongest evidence for the answer). */
  lead: ContrastMember | undefined;
}

type ContrastMetric = Pick<TopicMetric, "goal"> & { range?: [number, number]; equivalence?: number };

export function judgeContrasts(
  contrasts: readonly Contrast[],
  summaries: readonly ConfigurationSummary[],
  metric: ContrastMetric,
  /** The level the verdicts are held to: 0.05, or the campaign's look's (sequential-design.ts). */
  level = alpha,
  /** Each configuration's scores by seed: a member is compared as the incumbent is (domain/incumbent.ts), paired where it shares the seeds. */
  scores?: SeedScores,
): ContrastVerdict[] {
  const baseline = summaries.find((summary) => Object.keys(summary.configuration.delta).length === 0 && summary.sample.n > 0);
  const sign = metric.goal === "maximize" ? 1 : -1;
  const raw = contrasts.map((contrast) => ({
    contrast,
    members: summaries.filter((summary) => {
      const keys = Object.keys(summary.configuration.delta);
      return summary.sample.n > 0 && keys.length === 1 && keys[0] === contrast.knob && onContrastSide(contrast, summary.configuration.delta[contrast.knob]!);
    }),
  }));
  const pairs = raw.flatMap(({ contrast, members }) => members.map((member) => ({ contrast, member })));
  const tests = pairs.map(({ member }) => (baseline ? comparePair(member, baseline, metric, level, scores) : undefined));
  const pHolm = holmAdjust(tests.map((test) => test?.row.p));
  const tostHolm = holmAdjust(tests.map((test) => test?.row.equivalenceP));
  const family = pHolm.filter((p) => p !== undefined).length;
  const judged = pairs.map(({ contrast, member }, index): ContrastMember => {
    const test = tests[index];
    const difference = member.sample.mean - (baseline?.sample.mean ?? Number.NaN);
    const common = {
      configurationId: member.configuration.id,
      value: member.configuration.delta[contrast.knob]!,
      n: member.sample.n,
      mean: member.sample.mean,
    };
    if (!test || test.row.p === undefined)
      return {
        ...common,
        difference,
        advantage: sign * difference,
        low: undefined,
        high: undefined,
        level: 1 - level,
        p: undefined,
        pHolm: undefined,
        equivalencePHolm: undefined,
        verdict: "undecidable",
      };
    // Shown at the level its Holm step tests at, so the interval excludes 0 exactly when the verdict is beyond seed noise.
    const intervalLevel = holmIntervalLevel(test.row.p, pHolm[index], family, level);
    const shown = comparePair(member, baseline!, metric, 1 - intervalLevel, scores)!;
    // The paired test's effect is the mean matched difference, which may differ from the difference of the means.
    const paired = test.memberLeads ? sign * test.row.advantage : -sign * test.row.advantage;
    const advantage = sign * paired;
    const interval = shown.row.low === undefined ? undefined : memberInterval(shown.row.low, shown.row.high!, sign, shown.memberLeads);
    const verdict: MemberVerdict =
      tostHolm[index] !== undefined && tostHolm[index]! < level ? "equivalent" : pHolm[index]! < level ? (advantage > 0 ? "better" : "worse") : "open";
    return {
      ...common,
      difference: paired,
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
  return raw.map(({ contrast, members }) => {
    const rows = members.map((summary) => {
      const row = judged[next++]!;
      return row.verdict === "open" && baseline ? { ...row, settle: settleMember(row, [summary, baseline], metric.equivalence, openCount) } : row;
    });
    const { answer, lead } = answerOf(contrast, rows);
    return { contrast, baselineId: baseline?.configuration.id, baselineN: baseline?.sample.n ?? 0, answer, members: rows, lead };
  });
}

/** member − baseline (raw units) from the incumbent's advantage interval (positive = better for the goal). */
function memberInterval(low: number, high: number, sign: number, memberLeads: boolean): [number, number] {
  const [rawLow, rawHigh] = sign > 0 ? [low, high] : [-high, -low];
  return memberLeads ? [rawLow, rawHigh] : [-rawHigh, -rawLow];
}

function settleMember(member: ContrastMember, pair: ConfigurationSummary[], equivalence: number | undefined, openCount: number): ContrastMember["settle"] {
  // Sides that share seeds are sized on their seed-matched differences, as domain/follow-up.ts sizes the incumbent's.
  const std = member.matched ? matchedSeedStd(member.matched) : pooledStd(pair);
  if (std === undefined) return undefined;
  return seedsToSettle(member.difference, std, equivalence, alpha / Math.max(1, openCount));
}

/** Whether a member counts for "yes" under the contrast's ask. */
function affirms(ask: Contrast["ask"], verdict: MemberVerdict): boolean {
  return ask === "helps" ? verdict === "better" : ask === "hurts" ? verdict === "worse" : verdict === "better" || verdict === "worse";
}

/** Whether a member counts against "yes" (settled the other way, or the same within the margin). */
function denies(ask: Contrast["ask"], verdict: MemberVerdict): boolean {
  return verdict === "equivalent" || (ask === "helps" && verdict === "worse") || (ask === "hurts" && verdict === "better");
}

function answerOf(contrast: Contrast, members: ContrastMember[]): { answer: ContrastAnswer; lead: ContrastMember | undefined } {
  // For the lead: the member that goes furthest in the direction asked.
  const towardAsk = (member: ContrastMember): number =>
    contrast.ask === "hurts" ? -member.advantage : contrast.ask === "helps" ? member.advantage : Math.abs(member.advantage);
  const byAsk = [...members].sort((left, right) => towardAsk(right) - towardAsk(left));
  const yes = byAsk.find((member) => affirms(contrast.ask, member.verdict));
  if (yes) return { answer: "yes", lead: yes };
  if (members.length > 0 && members.every((member) => member.verdict === "equivalent")) return { answer: "equivalent", lead: byAsk[0] };
  if (members.length > 0 && members.every((member) => denies(contrast.ask, member.verdict))) return { answer: "no", lead: byAsk[0] };
  return { answer: "not decided", lead: byAsk.find((member) => member.verdict === "open" || member.verdict === "undecidable") ?? byAsk[0] };
}
