import { describe, expect, it } from "vitest";
import { summarizeSample } from "./statistics.ts";
import { rankAgainstIncumbent } from "./incumbent.ts";
import { followUps, seedsToAdd } from "./follow-up.ts";
import type { ConfigurationSummary } from "./planner.ts";

const summary = (id: string, scores: number[]): ConfigurationSummary => ({
  configuration: { id, settings: {}, delta: {} },
  scores,
  sample: summarizeSample(scores),
  failed: 0,
  stage: 1,
});

describe("the incumbent against the rest", () => {
  it("Holm-corrects the family: a pair significant alone may not be in a family of three", () => {
    const best = summary("a", [0.7, 0.72, 0.71]);
    const close = summary("b", [0.66, 0.69, 0.67]);
    const far = summary("c", [0.1, 0.12, 0.11]);
    const alone = rankAgainstIncumbent([best, close], { goal: "maximize" })!;
    const family = rankAgainstIncumbent([best, close, far, summary("d", [0.2, 0.21, 0.2])], { goal: "maximize" })!;
    const pAlone = alone.comparisons[0]!;
    const pFamily = family.comparisons.find((row) => row.otherId === "b")!;
    expect(pAlone.pHolm).toBeCloseTo(pAlone.p!, 12);
    expect(pFamily.pHolm!).toBeGreaterThanOrEqual(pFamily.p!);
    expect(family.runnerUp?.otherId).toBe("b");
    expect(family.comparisons.find((row) => row.otherId === "c")?.verdict).toBe("worse");
  });

  it("minimizes too: the advantage is positive when the incumbent is lower", () => {
    const ranking = rankAgainstIncumbent([summary("low", [1, 1.1, 1.05]), summary("high", [3, 3.1, 2.9])], { goal: "minimize" })!;
    expect(ranking.incumbent.configuration.id).toBe("low");
    expect(ranking.comparisons[0]!.advantage).toBeCloseTo(1.95, 10);
    expect(ranking.comparisons[0]!.low!).toBeGreaterThan(0);
    expect(ranking.status).toBe("separated");
  });

  it("calls a tie within the margin, undecidable with one seed, and alone with nothing to compare", () => {
    const tie = rankAgainstIncumbent([summary("a", [0.601, 0.6, 0.602, 0.599]), summary("b", [0.598, 0.6, 0.601, 0.597])], {
      goal: "maximize",
      equivalence: 0.02,
    })!;
    expect(tie.status).toBe("tied");
    const single = rankAgainstIncumbent([summary("a", [0.9]), summary("b", [0.1, 0.2])], { goal: "maximize" })!;
    expect(single.comparisons[0]!.verdict).toBe("undecidable");
    expect(single.status).toBe("open");
    expect(rankAgainstIncumbent([summary("a", [0.9])], { goal: "maximize" })!.status).toBe("alone");
    expect(rankAgainstIncumbent([], { goal: "maximize" })).toBeUndefined();
  });

  it("clips the difference's interval to what the metric's range allows", () => {
    const ranking = rankAgainstIncumbent([summary("a", [0.9, 0.1]), summary("b", [0.1, 0.15])], { goal: "maximize", range: [0, 1] })!;
    expect(ranking.comparisons[0]!.low).toBeGreaterThanOrEqual(-1);
    expect(ranking.comparisons[0]!.high).toBeLessThanOrEqual(1);
  });
});

describe("follow-ups", () => {
  it("sizes the seeds from the pair's spread, and gives the incumbent the largest count when it is the noisier side", () => {
    const summaries = [summary("a", [0.62, 0.56, 0.68]), summary("b", [0.6, 0.58, 0.61]), summary("c", [0.55, 0.6, 0.58])];
    const ranking = rankAgainstIncumbent(summaries, { goal: "maximize" })!;
    const plans = followUps(ranking, summaries, undefined);
    expect(plans.map((plan) => plan.kind)).toEqual(["separate", "separate"]);
    const adds = seedsToAdd(ranking, summaries, plans, 100);
    // The incumbent's spread is the larger: its seeds shrink both comparisons' error most.
    expect(adds.map((item) => item.id)).toEqual(["a"]);
    expect(adds[0]!.add).toBe(Math.max(...plans.map((plan) => Math.min(30, plan.seedsPerSide) - 3)));
    // With a margin wider than the gap, showing them the same is the cheaper answer.
    expect(followUps(ranking, summaries, 0.1)[0]!.kind).toBe("equivalence");
    expect(seedsToAdd(ranking, summaries, plans, 2).every((item) => item.add <= 2 && item.add >= 1)).toBe(true);
  });

  it("races: a comparison's seeds go to the side whose spread they shrink most; a side without a variance always gets them", () => {
    // A steady incumbent against a noisy challenger: only the challenger is replicated.
    const steady = [summary("a", [0.7, 0.71, 0.7]), summary("b", [0.5, 0.65, 0.4])];
    const steadyRanking = rankAgainstIncumbent(steady, { goal: "maximize" })!;
    expect(seedsToAdd(steadyRanking, steady, followUps(steadyRanking, steady, undefined), 1)).toEqual([{ id: "b", add: 1 }]);
    // A challenger with one seed has no variance: it gets seeds, and so does nobody else unless needed.
    const single = [summary("a", [0.7, 0.5, 0.6]), summary("b", [0.55])];
    const singleRanking = rankAgainstIncumbent(single, { goal: "maximize" })!;
    expect(seedsToAdd(singleRanking, single, followUps(singleRanking, single, undefined), 1).map((item) => item.id)).toEqual(["b"]);
    // Two comparisons, one won by each side: the incumbent first, then the challenger that needs seeds.
    // (Each spread is floored at the pooled one, 0.225 here: c counts as 0.225, below a's 0.25, b's 0.3.)
    const mixed = [summary("a", [0.75, 0.5, 1]), summary("b", [0.6, 0.3, 0.9]), summary("c", [0.62, 0.63, 0.62])];
    const mixedRanking = rankAgainstIncumbent(mixed, { goal: "maximize" })!;
    expect(seedsToAdd(mixedRanking, mixed, followUps(mixedRanking, mixed, undefined), 1)).toEqual([
      { id: "a", add: 1 },
      { id: "b", add: 1 },
    ]);
  });
});

describe("paired comparisons (seed-matched differences)", () => {
  const byId = (entries: Record<string, number[]>) =>
    new Map(Object.entries(entries).map(([id, scores]) => [id, new Map(scores.map((score, index) => [index + 1, score]))]));

  it("pairs two configurations on the seeds both ran, and says so; two shared seeds stay Welch, its error raised to the paired one", () => {
    const a = [0.3, 0.6, 0.45, 0.8];
    const b = [0.26, 0.57, 0.4, 0.77];
    const summaries = [summary("a", a), summary("b", b)];
    const unpaired = rankAgainstIncumbent(summaries, { goal: "maximize" })!.comparisons[0]!;
    const paired = rankAgainstIncumbent(summaries, { goal: "maximize" }, 0.05, byId({ a, b }))!.comparisons[0]!;
    expect(unpaired.verdict).toBe("open");
    expect(paired.verdict).toBe("worse");
    expect(paired.matched).toMatchObject({ seeds: 4, paired: true });
    expect(paired.df).toBe(3);
    expect(paired.advantage).toBeCloseTo(0.0375, 10);
    const two = [summary("a", a.slice(0, 2)), summary("b", b.slice(0, 2))];
    const twoShared = rankAgainstIncumbent(two, { goal: "maximize" }, 0.05, byId({ a: a.slice(0, 2), b: b.slice(0, 2) }))!.comparisons[0]!;
    expect(twoShared.matched).toMatchObject({ seeds: 2, paired: false });
    expect(twoShared.p).toBeCloseTo(rankAgainstIncumbent(two, { goal: "maximize" })!.comparisons[0]!.p!, 12);
    // A seed that moves the two oppositely: the matched differences spread more than Welch assumes.
    const opposed = [summary("a", [0.5, 0.7]), summary("b", [0.45, 0.4])];
    const guarded = rankAgainstIncumbent(opposed, { goal: "maximize" }, 0.05, byId({ a: [0.5, 0.7], b: [0.45, 0.4] }))!.comparisons[0]!;
    expect(guarded.p!).toBeGreaterThan(rankAgainstIncumbent(opposed, { goal: "maximize" })!.comparisons[0]!.p!);
  });

  it("gives a paired comparison's next seed to both sides, sized by the spread of the differences", () => {
    const a = [0.3, 0.6, 0.45];
    const b = [0.28, 0.61, 0.43];
    const summaries = [summary("a", a), summary("b", b)];
    // At a late look's small level the tie is not shown yet.
    const ranking = rankAgainstIncumbent(summaries, { goal: "maximize", equivalence: 0.05 }, 0.005, byId({ a, b }))!;
    expect(ranking.comparisons[0]!.verdict).toBe("open");
    const plans = followUps(ranking, summaries, 0.05, 0.005);
    expect(plans[0]).toMatchObject({ paired: true, kind: "equivalence" });
    expect(plans[0]!.std).toBeCloseTo(ranking.comparisons[0]!.matched!.differenceStd / Math.SQRT2, 12);
    expect(seedsToAdd(ranking, summaries, plans, 1)).toEqual([
      { id: "a", add: 1 },
      { id: "b", add: 1 },
    ]);
  });
});
