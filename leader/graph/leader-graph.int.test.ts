import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendEvent, auditCampaign, createCampaign, readEvents } from "../../campaign/index.ts";
import { parseHostsText } from "../../hosts/kinds/hosts-config.ts";
import { LocalLauncher } from "../../hosts/index.ts";
import type { DispatchHost, HostConfig } from "../../hosts/index.ts";
import { runLeader } from "./leader-graph.ts";
import { topicTextWithAbsolutePaths } from "../domain/topic-paths.ts";
import { HeuristicPlanner } from "../planners/heuristic/heuristic-planner.ts";
import { fixtureTopicText } from "../../test-support/fixture-topic.ts";
import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";

const root = resolve(import.meta.dirname, "../..");
const a3r = `${process.execPath} ${join(root, "bin/a3r.js")}`;

/**
 * A whole campaign through the real graph, the real SQLite checkpointer and real
 * `a3r worker run` processes; only the trainer is the worker's small fixture program
 * (5 steps of verl-style log lines). Its reward does not depend on lr, so the refinement
 * stage brings no improvement and the campaign stops after exactly two stages.
 */
const topicText = (): string => fixtureTopicText({ stages: 2 });

describe("the leader graph", () => {
  let runsDir: string;
  let hosts: DispatchHost[];

  beforeEach(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-leader-graph-"));
    const parsed = parseHostsText(
      `hosts:\n  - name: here\n    kind: local\n    gpus: 0\n    max_runs: 2\n    workdir: ${join(runsDir, "host")}\n`,
      "hosts.yaml",
    );
    const config = { ...parsed.hosts[0]!, a3r } as HostConfig;
    hosts = [
      { config, launcher: new LocalLauncher({ host: "here", workdir: join(runsDir, "host"), a3r }), capacity: { name: "here", gpuIndices: [], maxRuns: 2 } },
    ];
  });
  afterEach(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  it("runs two stages to a report, and resumes after a crash without launching anything twice", async () => {
    await createCampaign(runsDir, "graph-test", topicText());
    const options = { runsDir, campaignId: "graph-test", planner: new HeuristicPlanner(), hosts, intervalMs: 300 };

    // The first leader dies as it starts watching stage 2 (its runs are already launched).
    let crashed = false;
    await expect(
      runLeader({
        ...options,
        onNode: (node, state) => {
          if (node === "watch" && state.stagePlan?.stage === 2 && !crashed) {
            crashed = true;
            expect(state.history).toHaveLength(1);
            throw new Error("simulated leader crash");
          }
        },
      }),
    ).rejects.toThrow(/simulated leader crash/);

    const { state: final } = await runLeader(options);
    expect(final.stop?.reason).toBe("no-improvement");
    expect(final.history.map((record) => record.plan.configurations.map((item) => item.id))).toEqual([
      ["baseline", "lr-0.01"],
      ["lr-0.0316", "lr-1"],
    ]);
    const outcomes = final.history.flatMap((record) => record.outcomes);
    expect(outcomes.map((item) => [item.blueprintId, item.state])).toEqual([
      ["s1-baseline-seed1", "succeeded"],
      ["s1-lr-0.01-seed1", "succeeded"],
      ["s2-lr-0.0316-seed1", "succeeded"],
      ["s2-lr-1-seed1", "succeeded"],
    ]);
    expect(outcomes.every((item) => item.score === 0.5)).toBe(true);

    const campaign = join(runsDir, "graph-test");
    const report = await readFile(join(campaign, "report.md"), "utf8");
    expect(report).toMatch(/best configuration measured is \*\*baseline\*\*/);
    expect(report).toMatch(/Stopped: no-improvement/);
    expect(await readFile(join(campaign, "stages/2/analysis.md"), "utf8")).toMatch(/lr-1\*\*: REFUTED/);
    expect((await readdir(join(campaign, "results"))).sort()).toEqual(["s1-baseline-seed1", "s1-lr-0.01-seed1", "s2-lr-0.0316-seed1", "s2-lr-1-seed1"]);

    // Each blueprint was launched exactly once, the resumed watch re-attached.
    const { events } = await readEvents(join(campaign, "events.jsonl"));
    const launches = events.filter((event) => event.kind === "run.dispatched" && event.started === true).map((event) => event.blueprintId);
    expect(launches.sort()).toEqual(["s1-baseline-seed1", "s1-lr-0.01-seed1", "s2-lr-0.0316-seed1", "s2-lr-1-seed1"]);
    expect(events.filter((event) => event.kind === "campaign.reported")).toHaveLength(1);

    // A finished campaign resumed again does nothing.
    const { state: again } = await runLeader(options);
    expect(again.reportFile).toBe(final.reportFile);
    expect((await readEvents(join(campaign, "events.jsonl"))).events).toHaveLength(events.length);

    // The finished campaign folder passes the campaign audit.
    const findings = await auditCampaign(campaign);
    expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
  }, 180_000);

  it("stops at the smoke test when the campaign's first run fails before its first training signal, and launches nothing else", async () => {
    // The base command names a trainer that does not exist: node exits at once, no metric ever.
    await createCampaign(runsDir, "smoke-fails", topicText().replace("command: node trainer.mjs", "command: node no-such-trainer.mjs"));
    const { state: final } = await runLeader({ runsDir, campaignId: "smoke-fails", planner: new HeuristicPlanner(), hosts, intervalMs: 300 });

    expect(final.stop?.reason).toBe("stage-failed");
    expect(final.stop?.explanation).toMatch(/^smoke test: s1-baseline-seed1 failed before its first training signal/);
    expect(await readdir(join(runsDir, "smoke-fails", "results"))).toEqual(["s1-baseline-seed1"]);
    const { events } = await readEvents(join(runsDir, "smoke-fails", "events.jsonl"));
    expect(events.filter((event) => event.kind === "run.dispatched").map((event) => event.blueprintId)).toEqual(["s1-baseline-seed1"]);
    expect(events.find((event) => event.kind === "blueprint.skipped")).toMatchObject({
      blueprintId: "s1-lr-0.01-seed1",
      reason: "not run: the smoke test (s1-baseline-seed1) failed",
    });
    // The failure is in the analysis and the report, and the folder passes the audit.
    expect(final.history[0]!.outcomes.map((outcome) => [outcome.blueprintId, outcome.state])).toEqual([
      ["s1-baseline-seed1", "failed"],
      ["s1-lr-0.01-seed1", "missing"],
    ]);
    expect(await readFile(join(runsDir, "smoke-fails", "report.md"), "utf8")).toContain("Stopped: stage-failed: smoke test");
    const findings = await auditCampaign(join(runsDir, "smoke-fails"));
    expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
  }, 180_000);

  it("takes the review answer already on record when a leader died after taking it, not a second one", async () => {
    await createCampaign(runsDir, "reviewed", topicText().replace("seeds: 1", "seeds: 1\nreview: true"));
    const options = { runsDir, campaignId: "reviewed", planner: new HeuristicPlanner(), hosts, intervalMs: 300 };
    expect((await runLeader(options)).waitingFor).toMatchObject({ stage: 1, at: "plan", round: 0 });
    // What a leader killed right after taking `--instruct` leaves: the answer in the log, the
    // checkpoint still at the interrupt.
    await appendEvent(join(runsDir, "reviewed", "events.jsonl"), "review.instructed", { stage: 1, at: "plan", round: 0, instruction: "drop lr=0.01" });
    const run = await runLeader({ ...options, answer: { action: "approve" } });
    expect(run.waitingFor).toMatchObject({ stage: 1, at: "plan", round: 1 });
    expect(run.state.instructions.map((item) => item.text)).toEqual(["drop lr=0.01"]);
    expect(await readFile(join(runsDir, "reviewed", "stages/1/plan.md"), "utf8")).not.toContain("lr-0.01");
  }, 60_000);

  // Slow tier: in npm test, cli/override-landing's "a topic knob lr on a swarm.yaml without
  // optimizer: runs" takes a campaign of real swarm runs (embedded engine) to its report,
  // leader/analysis/analyze-stage.int.test.ts scores this example topic's runs (area), and
  // "runs two stages to a report" above checks the report names the measured best.
  it.skipIf(!slowTests)(
    `runs the embedded swarm example topic (2 tiny stages, real swarm engine) to a report whose answer is the measured best${slowTierNote}`,
    async () => {
      // The example topic, made tiny: 3 training steps, one seed, on this machine only.
      const exampleTopic = join(root, "examples/topics/embedded-lr.md");
      const text = topicTextWithAbsolutePaths(await readFile(exampleTopic, "utf8"), exampleTopic)
        .replace("overrides: { max_steps: 20 }", "overrides: { max_steps: 3 }")
        .replace("seeds: 2", "seeds: 1")
        .replace("hosts: ../hosts/local-only.yaml\n", "");
      expect(text).toMatch(/max_steps: 3 /);
      await createCampaign(runsDir, "embedded-lr", text);
      const { state: final } = await runLeader({
        runsDir,
        campaignId: "embedded-lr",
        planner: new HeuristicPlanner(),
        hosts,
        intervalMs: 500,
      });

      expect(final.history.map((record) => record.plan.kind)).toEqual(["screen", "refine"]);
      expect(final.history[0]!.plan.configurations.map((item) => item.id)).toEqual(["baseline", "lr-0.05", "lr-0.5"]);
      const outcomes = final.history.flatMap((record) => record.outcomes);
      expect(outcomes.map((item) => item.state)).toEqual(outcomes.map(() => "succeeded"));
      expect(outcomes.every((item) => item.score !== undefined && item.score >= 0 && item.score <= 1)).toBe(true);
      expect(["no-improvement", "budget"]).toContain(final.stop?.reason);

      const best = outcomes.reduce((left, right) => (right.score! > left.score! ? right : left));
      const report = await readFile(join(runsDir, "embedded-lr", "report.md"), "utf8");
      expect(report).toContain(`best configuration measured is **${best.configurationId}**`);
    },
    300_000,
  );
});
