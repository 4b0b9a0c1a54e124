import { readFile, readdir, rm, writeFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { auditCampaign, createCampaign, readEvents } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { isA3rError } from "../../core/errors.ts";
import { parseHostsText } from "../../hosts/kinds/hosts-config.ts";
import { LocalLauncher } from "../../hosts/index.ts";
import type { DispatchHost, HostConfig } from "../../hosts/index.ts";
import { fixtureTopicText } from "../../test-support/fixture-topic.ts";
import { rewriteCampaignReport } from "../report/campaign-report.ts";
import { summarizeCampaign } from "../../cli/research/campaign-status.ts";
import { runLeader } from "../graph/leader-graph.ts";
import { HeuristicPlanner } from "../planners/heuristic/heuristic-planner.ts";
import { loadTopic } from "../domain/topic.ts";

const a3r = `${process.execPath} ${join(resolve(import.meta.dirname, "../.."), "bin/a3r.js")}`;

/**
 * A campaign stopped on a budget goes on after the budget is raised (`a3r resume
 * --reopen`), from the node that stopped it, with every earlier run kept and none run
 * twice. The fixture trainer's reward does not depend on lr, so with room for two stages
 * the campaign ends on "no-improvement" after the second.
 */
describe("re-opening a campaign stopped on a budget", () => {
  let runsDir: string;
  let hosts: DispatchHost[];

  beforeEach(async () => {
    runsDir = await mkdtemp(join(tmpdir(), "a3r-reopen-"));
    const config = parseHostsText(`hosts:\n  - { name: here, kind: local, gpus: 0, max_runs: 2, workdir: ${join(runsDir, "host")} }\n`, "hosts.yaml")
      .hosts[0] as HostConfig;
    hosts = [
      {
        config: { ...config, a3r } as HostConfig,
        launcher: new LocalLauncher({ host: "here", workdir: join(runsDir, "host"), a3r }),
        capacity: { name: "here", gpuIndices: [], maxRuns: 2 },
      },
    ];
  });
  afterEach(async () => {
    await rm(runsDir, { recursive: true, force: true });
  });

  const raiseStages = async (paths: CampaignPaths, stages: number) => {
    const text = await readFile(paths.topic, "utf8");
    await writeFile(paths.topic, text.replace(/budgets: \{ stages: \d+,/, `budgets: { stages: ${stages},`));
    expect((await loadTopic(paths.topic)).topic.budgets.stages).toBe(stages);
  };
  const refusal = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    if (!isA3rError(error)) throw new Error(`expected an A3rError, got ${String(error)}`);
    return error;
  };

  it("goes on from the stopping decision after the budget is raised; a re-opening without room stops the same way again", async () => {
    const { paths } = await createCampaign(runsDir, "reopened", fixtureTopicText({ stages: 1 }));
    const options = { runsDir, campaignId: "reopened", planner: new HeuristicPlanner(), hosts, intervalMs: 300 };
    const first = await runLeader(options);
    expect(first.state.stop).toMatchObject({ reason: "budget", explanation: expect.stringMatching(/^stage 2 would exceed the budget of 1 stage\(s\)/) });

    // Re-opened with the budget unchanged: the decision is taken again, and stops again.
    const same = await runLeader({ ...options, reopen: true });
    expect(same.state.stop?.reason).toBe("budget");
    expect(same.state.history).toHaveLength(1);
    expect((await summarizeCampaign(runsDir, "reopened")).state).toBe("finished");

    await raiseStages(paths, 2);
    const { state: final } = await runLeader({ ...options, reopen: true });
    expect(final.stop?.reason).toBe("no-improvement");
    expect(final.history.map((record) => record.outcomes.map((outcome) => [outcome.blueprintId, outcome.state]))).toEqual([
      [
        ["s1-baseline-seed1", "succeeded"],
        ["s1-lr-0.01-seed1", "succeeded"],
      ],
      [
        ["s2-lr-0.0316-seed1", "succeeded"],
        ["s2-lr-1-seed1", "succeeded"],
      ],
    ]);

    const { events } = await readEvents(paths.events);
    const kinds = (kind: string) => events.filter((event) => event.kind === kind);
    expect(kinds("campaign.reopened").map((event) => [event.openRound, event.at])).toEqual([
      [1, ["decide"]],
      [2, ["decide"]],
    ]);
    expect(kinds("campaign.stop_decided").map((event) => [event.openRound, event.reason])).toEqual([
      [0, "budget"],
      [1, "budget"],
      [2, "no-improvement"],
    ]);
    expect(kinds("campaign.reported").map((event) => event.openRound)).toEqual([0, 1, 2]);
    // Stage 1's runs were launched once, in the first round; stage 2's once, in the last.
    expect(
      kinds("run.dispatched")
        .filter((event) => event.started === true)
        .map((event) => event.blueprintId)
        .sort(),
    ).toEqual(["s1-baseline-seed1", "s1-lr-0.01-seed1", "s2-lr-0.0316-seed1", "s2-lr-1-seed1"]);
    expect((await readdir(join(paths.root, "leader-answers"))).sort()).toEqual(
      expect.arrayContaining(["decide-1-r0.json", "decide-1-r0-o1.json", "decide-1-r0-o2.json"]),
    );

    // Status, the report and `a3r report` all tell the last round's story.
    const summary = await summarizeCampaign(runsDir, "reopened");
    expect(summary).toMatchObject({ state: "finished", stages: 2, stop: { reason: "no-improvement" } });
    const report = await readFile(paths.report, "utf8");
    expect(report).toMatch(/Stopped: no-improvement/);
    // The report says the campaign was re-opened, twice, after which stop.
    expect(
      report.match(
        /^Re-opened \(round \d, [\d-]+ [\d:]+ UTC\) after it had stopped on a budget: stage 2 would exceed the budget of 1 stage\(s\)(; still open: [^\n]*)?\.$/gm,
      ),
    ).toHaveLength(2);
    expect(await readFile(paths.reportHtml, "utf8")).toContain("Re-opened (round 2");
    const rewritten = await rewriteCampaignReport(paths, (await loadTopic(paths.topic)).topic);
    expect(rewritten.markdown).toMatch(/Stopped: no-improvement/);
    expect(rewritten.markdown).not.toMatch(/Stopped: budget/);
    expect((await auditCampaign(paths.root)).filter((finding) => finding.severity === "error")).toEqual([]);

    // A stop the planner reasoned its way to is not re-opened.
    const refused = await refusal(runLeader({ ...options, reopen: true }));
    expect(refused.code).toBe("CAMPAIGN_NOT_REOPENABLE");
    expect(refused.message).toMatch(/stopped for no-improvement/);
  }, 180_000);

  it("finishes a re-opening that a crash cut short with a plain resume, and refuses to re-open a campaign that has not finished", async () => {
    const { paths } = await createCampaign(runsDir, "cut-short", fixtureTopicText({ stages: 1 }));
    const options = { runsDir, campaignId: "cut-short", planner: new HeuristicPlanner(), hosts, intervalMs: 300 };
    // A leader that dies as it enters its first analysis: the campaign has not finished.
    await expect(
      runLeader({
        ...options,
        onNode: (node) => {
          if (node === "analyze") throw new Error("simulated crash");
        },
      }),
    ).rejects.toThrow(/simulated crash/);
    const early = await refusal(runLeader({ ...options, reopen: true }));
    expect(early.code).toBe("CAMPAIGN_NOT_REOPENABLE");
    expect(early.message).toMatch(/has not finished/);
    expect((await runLeader(options)).state.stop?.reason).toBe("budget");

    await raiseStages(paths, 2);
    // The re-opening is logged, then the leader dies in the node it forked to.
    await expect(
      runLeader({
        ...options,
        reopen: true,
        onNode: (node) => {
          if (node === "decide") throw new Error("simulated crash");
        },
      }),
    ).rejects.toThrow(/simulated crash/);
    expect((await summarizeCampaign(runsDir, "cut-short")).state).not.toBe("finished");
    const { state: final } = await runLeader(options);
    expect(final.history).toHaveLength(2);
    const { events } = await readEvents(paths.events);
    expect(events.filter((event) => event.kind === "campaign.reopened")).toHaveLength(1);
    expect(events.filter((event) => event.kind === "campaign.reported").map((event) => event.openRound)).toEqual([0, 1]);
  }, 180_000);
});
