import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents, readRunStatus } from "../campaign/index.ts";
import { earlyStopBlueprintIds, writeEarlyStopTopic } from "../test-support/early-stop-topic.ts";
import { runA3r } from "../test-support/run-cli.ts";

/**
 * `a3r research` on a topic with `early_stop`, real workers on this machine: the hopeless
 * configuration (lr 3) is stopped at a rung through its worker, the two good ones complete,
 * and the analysis and the report say what was cut, when and why.
 */
describe("a3r research with early stopping", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-early-stop-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("stops the clearly worse configuration at a rung, lets the better ones complete, and reports the cut", async () => {
    const topic = await writeEarlyStopTopic(dir);
    const runsDir = join(dir, "runs");
    const research = await runA3r(["research", topic, "--runs-dir", runsDir, "--campaign", "cut", "--planner", "heuristic"], { timeoutMs: 120_000 });
    expect(research.code, research.stderr).toBe(0);
    const campaign = join(runsDir, "cut");
    const stateOf = async (id: string) => (await readRunStatus(join(campaign, "results", id, "status.json"))).status!;

    const bad = await stateOf(earlyStopBlueprintIds.bad);
    expect(bad.state).toBe("stopped_early");
    expect(bad.reason).toMatch(/rung 1 of 2 \(25% of max_steps = step 5 of 20\)/);
    // Stopped near the rung, long before its 20 steps.
    expect(bad.step).toBeGreaterThanOrEqual(5);
    expect(bad.step).toBeLessThan(20);
    expect((await stateOf(earlyStopBlueprintIds.good)).state).toBe("succeeded");
    expect((await stateOf(earlyStopBlueprintIds.close)).state).toBe("succeeded");
    expect((await stateOf(earlyStopBlueprintIds.close)).step).toBe(20);

    const { events } = await readEvents(join(campaign, "events.jsonl"));
    const stops = events.filter((event) => event.kind === "run.stopped_early");
    expect(stops).toHaveLength(1);
    expect(stops[0]).toMatchObject({
      blueprintId: earlyStopBlueprintIds.bad,
      configurationId: "lr-3",
      rung: 1,
      rungStep: 5,
      bestConfiguration: "baseline",
      requested: true,
      margin: 0.1,
    });
    expect(stops[0]!.score as number).toBeCloseTo(0.1, 5);
    expect(stops[0]!.best as number).toBeCloseTo(0.8, 5);
    // The worker recorded the same evidence in the run's own events.
    const runEvents = (await readEvents(join(campaign, "results", earlyStopBlueprintIds.bad, "events.jsonl"))).events;
    expect(runEvents.find((event) => event.kind === "run.stop-requested")).toMatchObject({ evidence: { rung: 1, rungStep: 5, bestConfiguration: "baseline" } });

    const analysis = await readFile(join(campaign, "stages", "1", "analysis.md"), "utf8");
    expect(analysis).toContain("## Stopped early (successive halving)");
    expect(analysis).toMatch(new RegExp(`- ${earlyStopBlueprintIds.bad} \\(lr-3, seed 1\\): stopped early at step \\d+`));
    expect(analysis).not.toContain("## Failed or missing");
    const report = await readFile(join(campaign, "report.md"), "utf8");
    expect(report).toContain("## Stopped early");
    expect(report).toMatch(new RegExp(`stage 1, ${earlyStopBlueprintIds.bad} \\(lr-3, seed 1\\): stopped early at step \\d+ .*rung 1 of 2`));
    // Compared are only the runs that completed: lr-3 has no scored seed.
    expect(report).toMatch(/\| lr-3 \| [^|]+ \| 1 \| 0 \| 0 \| n\/a \|/);
  });
});
