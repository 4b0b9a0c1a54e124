import { alpha, clipDifference, equivalenceTest, holmAdjust, holmIntervalLevel, seedsToSeparate, seedsToShowEquivalence, welchTest } from "./comparisons.ts";
import { followUpPower, pooledStd } from "./follow-up.ts";
import type { ConfigurationSummary } from "./planner.ts";
import { onContrastSide, type Contrast } from "./question.ts";
import type { KnobValue, TopicMetric } from "./topic.ts";

/**
 * Each contrast of the question (question.ts) judged against the baseline: every measured
 * configuration that differs from the baseline in the contrast's knob alone, on the
 * contrast's side, is compared with the baseline by Welch's t (and TOST with the topic's
 * margin); Holm's correction runs over every such comparison of every contrast (one
 * family, the question's), and each interval is Holm-adjusted the same way as the
 * incumbent's (comparisons.ts `holmIntervalLevel`), so an interval excludes 0 exactly
 * when its comparison is beyond seed noise. Pure.
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

export function judgeContrasts(
  contrasts: readonly Contrast[],
  summaries: readonly ConfigurationSummary[],
  metric: Pick<TopicMetric, "goal"> & { range?: [number, number]; equivalence?: number },
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
  const tests = raw.flatMap(({ members }) =>
    members.map((member) => ({
      welch: baseline ? welchTest(member.scores, baseline.scores) : undefined,
      tost: baseline && metric.equivalence !== undefined ? equivalenceTest(member.scores, baseline.scores, metric.equivalence) : undefined,
    })),
  );
  const pHolm = holmAdjust(tests.map((test) => test.welch?.p));
  const tostHolm = holmAdjust(tests.map((test) => test.tost?.p));
  const family = pHolm.filter((p) => p !== undefined).length;
  let next = 0;
  const judged = raw.map(({ contrast, members }) =>
    members.map((member): ContrastMember => {
      const index = next++;
      const test = tests[index]!;
      const level = holmIntervalLevel(test.welch?.p, pHolm[index], family);
      const shown = baseline && test.welch ? welchTest(member.scores, baseline.scores, level) : undefined;
      const interval = shown ? clipDifference(shown.low, shown.high, metric.range) : undefined;
      const difference = member.sample.mean - (baseline?.sample.mean ?? Number.NaN);
      const advantage = sign * difference;
      const verdict: MemberVerdict = !test.welch
        ? "undecidable"
        : tostHolm[index] !== undefined && tostHolm[index]! < alpha
          ? "equivalent"
          : pHolm[index]! < alpha
            ? advantage > 0
              ? "better"
              : "worse"
            : "open";
      return {
        configurationId: member.configuration.id,
        value: member.configuration.delta[contrast.knob]!,
        n: member.sample.n,
        mean: member.sample.mean,
        difference,
        advantage,
        low: interval?.[0],
        high: interval?.[1],
        level,
        p: test.welch?.p,
        pHolm: pHolm[index],
        equivalencePHolm: tostHolm[index],
        verdict,
      };
    }),
  );
  const openCount = judged.flat().filter((member) => member.verdict === "open" || member.verdict === "undecidable").length;
  return raw.map(({ contrast, members }, index) => {
    const rows = judged[index]!.map((row, position) =>
      row.verdict === "open" && baseline ? { ...row, settle: settleMember(row, [members[position]!, baseline], metric.equivalence, openCount) } : row,
    );
    const { answer, lead } = answerOf(contrast, rows);
    return { contrast, baselineId: baseline?.configuration.id, baselineN: baseline?.sample.n ?? 0, answer, members: rows, lead };
  });
}

function settleMember(member: ContrastMember, pair: ConfigurationSummary[], equivalence: number | undefined, openCount: number): ContrastMember["settle"] {
  const std = pooledStd(pair);
  if (std === undefined) return undefined;
  const significance = alpha / Math.max(1, openCount);
  const separate = seedsToSeparate(Math.abs(member.difference), std, followUpPower, significance);
  const same = equivalence === undefined ? Number.POSITIVE_INFINITY : seedsToShowEquivalence(member.difference, equivalence, std, followUpPower, significance);
  return same < separate ? { seedsPerSide: same, kind: "equivalence" } : { seedsPerSide: separate, kind: "separate" };
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
