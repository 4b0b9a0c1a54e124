import { describe, expect, it } from "vitest";
import { isA3rError } from "../../core/errors.ts";
import { decideEarlyStops, earlyStopSchema, partialScore, rungStep, type EarlyStopRun } from "./early-stop.ts";
import { parseTopic } from "./topic.ts";

const metric = { name: "reward", goal: "maximize" as const };
const rule = earlyStopSchema.parse({ rungs: [0.25, 0.5], keep: 0.5 });

/** A run whose metric is `level` at every step up to `lastStep` (max_steps 20: rungs at steps 5 and 10). */
function run(
  blueprintId: string,
  configurationId: string,
  level: number,
  lastStep: number | null,
  live = true,
  extra: Partial<EarlyStopRun> = {},
): EarlyStopRun {
  const points = lastStep === null ? [] : Array.from({ length: lastStep }, (_, index) => ({ step: index + 1, value: level }));
  return { blueprintId, configurationId, live, maxSteps: 20, lastStep, points, ...extra };
}

describe("early stop rule", () => {
  it("puts rung k at step ceil(fraction x max_steps), at least 1", () => {
    expect(rungStep(0.25, 20)).toBe(5);
    expect(rungStep(0.3, 20)).toBe(6);
    expect(rungStep(0.01, 20)).toBe(1);
  });

  it("scores a rung by the mean of the last values at or before its step", () => {
    const points = [1, 2, 3, 4, 5, 6].map((value, index) => ({ step: index + 1, value }));
    expect(partialScore(points, 5, 3)).toBe(4);
    expect(partialScore(points, 2, 3)).toBe(1.5);
    expect(partialScore([], 5, 3)).toBeUndefined();
  });

  it("refuses rungs outside (0, 1), not ascending, and keep outside (0, 1)", () => {
    expect(earlyStopSchema.safeParse({ rungs: [0, 0.5], keep: 0.5 }).success).toBe(false);
    expect(earlyStopSchema.safeParse({ rungs: [0.5, 1], keep: 0.5 }).success).toBe(false);
    expect(earlyStopSchema.safeParse({ rungs: [0.5, 0.25], keep: 0.5 }).success).toBe(false);
    expect(earlyStopSchema.safeParse({ rungs: [0.5, 0.5], keep: 0.5 }).success).toBe(false);
    expect(earlyStopSchema.safeParse({ rungs: [0.5], keep: 1 }).success).toBe(false);
    expect(earlyStopSchema.safeParse({ rungs: [0.5], keep: 0 }).success).toBe(false);
    expect(earlyStopSchema.safeParse({ rungs: [0.5], keep: 0.5, extra: 1 }).success).toBe(false);
  });
});

describe("decideEarlyStops", () => {
  it("waits while a live run is short of the first rung", () => {
    const outcome = decideEarlyStops([run("a", "good", 0.8, 6), run("b", "bad", 0.1, 3)], rule, metric);
    expect(outcome).toEqual({ rungs: [], stops: [] });
  });

  it("stops the live runs of the configuration outside the top half, with its evidence", () => {
    const runs = [run("a1", "good", 0.8, 6), run("a2", "good", 0.7, 7), run("m1", "mid", 0.6, 5), run("b1", "bad", 0.1, 6), run("b2", "bad", 0.2, 8)];
    const outcome = decideEarlyStops(runs, rule, metric);
    expect(outcome.rungs).toHaveLength(1);
    expect(outcome.rungs[0]!.ranking.map((standing) => standing.configurationId)).toEqual(["good", "mid", "bad"]);
    expect(outcome.rungs[0]!.kept).toEqual(["good", "mid"]);
    expect(outcome.stops.map((stop) => stop.blueprintId)).toEqual(["b1", "b2"]);
    const stop = outcome.stops[0]!;
    expect(stop).toMatchObject({ rung: 1, fraction: 0.25, rungStep: 5, step: 6, bestConfiguration: "good", margin: 0 });
    expect(stop.score).toBeCloseTo(0.15);
    expect(stop.best).toBeCloseTo(0.75);
    expect(stop.reason).toContain("rung 1 of 2");
    expect(stop.reason).toContain("step 5 of 20");
    expect(stop.rule).toContain("max(2, ceil(0.5 x 3)) = 2");
  });

  it("keeps a configuration outside the top share when it is within the equivalence margin", () => {
    const runs = [run("a", "good", 0.8, 6), run("m", "mid", 0.795, 6), run("b", "close", 0.79, 6)];
    expect(decideEarlyStops(runs, rule, { ...metric, equivalence: 0.02 }).stops).toEqual([]);
    expect(decideEarlyStops(runs, rule, metric).stops.map((stop) => stop.blueprintId)).toEqual(["b"]);
  });

  it("ranks the other way round for a metric to minimize", () => {
    const runs = [run("a", "low", 0.1, 6), run("m", "mid", 0.2, 6), run("b", "high", 0.9, 6)];
    expect(decideEarlyStops(runs, rule, { name: "loss", goal: "minimize" }).stops.map((stop) => stop.configurationId)).toEqual(["high"]);
  });

  it("never stops a finished run, but counts its score at the rung", () => {
    const runs = [run("a", "good", 0.8, 20, false), run("m", "mid", 0.7, 20, false), run("b", "bad", 0.1, 20, false), run("c", "bad", 0.1, 6)];
    const outcome = decideEarlyStops(runs, rule, metric);
    expect(outcome.stops.map((stop) => stop.blueprintId)).toEqual(["c"]);
  });

  it("judges a run that starts late against the scores others had at the same rung", () => {
    // a and b finished long ago; c got a slot later and has just reached rung 1.
    const runs = [run("a", "good", 0.8, 20, false), run("b", "mid", 0.5, 20, false), run("c", "bad", 0.1, 5)];
    const outcome = decideEarlyStops(runs, rule, metric);
    expect(outcome.stops.map((stop) => [stop.blueprintId, stop.rung])).toEqual([["c", 1]]);
  });

  it("does not ask twice, and leaves a run stopped at rung 1 out of rung 2", () => {
    const runs = [
      run("a", "good", 0.8, 12),
      run("n", "next", 0.7, 12),
      run("m", "mid", 0.6, 11),
      run("b", "bad", 0.1, 12, true, { stoppedAtRung: 1 }),
      run("w", "worst", 0.05, 12, true, { stoppedAtRung: 1 }),
    ];
    const outcome = decideEarlyStops(runs, rule, metric);
    // b and w are not asked again; at rung 2 the three left are ranked, and the one below the top two is cut.
    expect(outcome.stops.map((stop) => [stop.blueprintId, stop.rung])).toEqual([["m", 2]]);
    expect(outcome.rungs.map((decision) => decision.ranking.map((standing) => standing.configurationId))).toEqual([
      ["good", "next", "mid", "bad", "worst"],
      ["good", "next", "mid"],
    ]);
    expect(outcome.rungs[1]!.cut).toEqual(["mid"]);
  });

  it("always keeps two configurations: the leader and a runner-up to compare it with", () => {
    const runs = [run("a", "good", 0.8, 12), run("m", "mid", 0.2, 12), run("b", "bad", 0.1, 12, true, { stoppedAtRung: 1 })];
    const outcome = decideEarlyStops(runs, rule, metric);
    expect(outcome.rungs[1]!.kept).toEqual(["good", "mid"]);
    expect(outcome.stops).toEqual([]);
    // A stage of two configurations is never cut, however far apart they are.
    expect(decideEarlyStops([run("a", "good", 0.9, 6), run("b", "bad", 0.0, 6)], rule, metric).stops).toEqual([]);
  });

  it("stops at rung 2 what rung 1 kept", () => {
    // mid is kept at rung 1 (second of five, the top three kept), then falls behind by step 10.
    const mid: EarlyStopRun = {
      blueprintId: "m",
      configurationId: "mid",
      live: true,
      maxSteps: 20,
      lastStep: 10,
      points: Array.from({ length: 10 }, (_, index) => ({ step: index + 1, value: index < 5 ? 0.78 : 0.2 })),
    };
    const runs = [
      run("a", "good", 0.8, 10),
      run("n", "next", 0.75, 10),
      mid,
      run("b", "bad", 0.1, 10, true, { stoppedAtRung: 1 }),
      run("w", "worst", 0.05, 10, true, { stoppedAtRung: 1 }),
    ];
    const outcome = decideEarlyStops(runs, rule, metric);
    expect(outcome.stops.map((stop) => [stop.blueprintId, stop.rung, stop.rungStep])).toEqual([["m", 2, 10]]);
  });

  it("stops nothing with a single configuration or no scores", () => {
    expect(decideEarlyStops([run("a", "only", 0.1, 6), run("b", "only", 0.9, 6)], rule, metric).stops).toEqual([]);
    expect(decideEarlyStops([run("a", "x", 0.1, null, false), run("b", "y", 0.9, null, false)], rule, metric).stops).toEqual([]);
  });

  it("gives the same answer when asked again with the same records (a leader re-run)", () => {
    const runs = [run("a", "good", 0.8, 6), run("m", "mid", 0.7, 6), run("b", "bad", 0.1, 6)];
    expect(decideEarlyStops(runs, rule, metric)).toEqual(decideEarlyStops(runs, rule, metric));
  });
});

describe("the topic's early_stop field", () => {
  const topicWith = (earlyStop: string) => `---\nmetric: { name: reward, goal: maximize }\nknobs: { lr: [0.1, 0.2] }\n${earlyStop}\n---\nWhich lr?\n`;

  it("is absent unless the topic opts in, and read with its default window", () => {
    expect(parseTopic(topicWith(""), { file: "t.md" }).earlyStop).toBeUndefined();
    expect(parseTopic(topicWith("early_stop: { rungs: [0.25, 0.5], keep: 0.5 }"), { file: "t.md" }).earlyStop).toEqual({
      rungs: [0.25, 0.5],
      keep: 0.5,
      window: 3,
    });
  });

  it.each([
    ["early_stop: { rungs: [0.5, 0.25], keep: 0.5 }", /early_stop\.rungs: rungs must be strictly ascending/],
    ["early_stop: { rungs: [0.25, 1], keep: 0.5 }", /early_stop\.rungs\.1: a rung is a fraction of max_steps below 1/],
    ["early_stop: { rungs: [0.25], keep: 1.5 }", /early_stop\.keep: keep is a share below 1/],
    ["early_stop: { rungs: [0.25] }", /early_stop\.keep is missing/],
  ])("refuses %s with TOPIC_INVALID naming the line and field", (line, message) => {
    let caught: unknown;
    try {
      parseTopic(topicWith(line), { file: "t.md" });
    } catch (error) {
      caught = error;
    }
    expect(isA3rError(caught, "TOPIC_INVALID")).toBe(true);
    expect((caught as Error).message).toMatch(/^t\.md:4: /);
    expect((caught as Error).message).toMatch(message);
    expect((caught as { hint?: string }).hint).toContain("early_stop: { rungs: [0.25, 0.5], keep: 0.5 }");
  });
});
