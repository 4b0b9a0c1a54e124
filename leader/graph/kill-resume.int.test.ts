import { slowTests } from "../../test-support/slow-tests.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditPaths, formatFinding } from "../../campaign/index.ts";
import { isGroupAlive } from "../../core/process-group.ts";
import { campaignInvariantProblems, campaignOutcome, collectCampaignEvidence, type CampaignEvidence } from "../../test-support/campaign-evidence.ts";
import { fastTopicBlueprintIds, writeFastTopic } from "../../test-support/fast-topic.ts";
import {
  firstLeaderNode,
  launchMarkers,
  onEvent,
  onFirstMetric,
  onLaunchRecords,
  onLeaderLine,
  onStderrLine,
  forgetDispatchEvent,
  rollBackNewestCheckpoint,
  runLeaderUntil,
  writeUnstartedClaim,
  type LeaderRun,
  type Trigger,
} from "../../test-support/killable-leader.ts";
import { runA3r, type CliResult } from "../../test-support/run-cli.ts";

/**
 * `a3r resume` after the leader was SIGKILLed at any point must finish the campaign as if
 * nothing happened: leader/README.md promises that a node re-run after a crash never starts a
 * second run of a blueprint, and a multi-day campaign on shared GPUs cannot afford one
 * (nor a lost result). Each kill point is its own campaign of the fast fixture topic
 * (6 runs over 2 stages, real `a3r worker run` processes): `a3r research` as a child
 * process, SIGKILL when a trigger fires, `a3r resume` to the end (twice for the points
 * that kill the resume too), then the campaign is compared with an uninterrupted one
 * using the records each part keeps for itself (launch records, status.json, the worker's
 * and the trainer's own logs), not the leader's word.
 *
 * Triggers name nodes and count their lines, so nodes added to the graph leave them
 * meaning the same moment. A kill lands a few milliseconds after its trigger, often one
 * node later for nodes that take milliseconds; each case logs where its resume started.
 * Two moments are too short to hit from outside (a launch claimed but its worker not yet
 * spawned; a node's writes saved but not the checkpoint after it): those cases kill at a
 * nearby line, then leave the files exactly as a kill in that moment would.
 */
interface KillPoint {
  name: string;
  trigger: Trigger;
  /** Kills the first `a3r resume` too, when this fires in it. */
  resumeTrigger?: Trigger;
  /** Runs were launched before the kill: the resumed leader must re-attach to them. */
  runsLive?: boolean;
  /** The trigger comes so late that the leader may finish before the kill lands. */
  mayFinishFirst?: boolean;
  /**
   * Runs in the default suite. The others run with A3R_SLOW_TESTS=1 (`npm run test:slow`,
   * and CI): each default case covers a different recovery mechanism (a claim never
   * started, live runs re-attached, a checkpoint older than the node's writes, a resume
   * killed too, the last node), so `npm test` still exercises every one once.
   */
  everyRun?: boolean;
  /** Fails today because of a bug outside this test (see the comments on `it.fails`). */
  knownBug?: boolean;
  /**
   * Turns the state the kill left into the one a kill in a gap too short to hit would
   * leave (writeUnstartedClaim, rollBackNewestCheckpoint); returns why it could not, or null.
   */
  afterKill?: (context: { runsDir: string; campaignId: string }) => Promise<string | null>;
}

const [stage1, stage2] = fastTopicBlueprintIds as [readonly string[], readonly string[]];

const killPoints: KillPoint[] = [
  { name: "planning stage 1", trigger: onLeaderLine("plan", 1) },
  {
    name: "launching the first run: its launch claimed, its worker not started yet",
    trigger: onLeaderLine("plan", 1),
    afterKill: (context) => writeUnstartedClaim(context, stage1[0]!),
    everyRun: true,
  },
  // Runs live at the kill are covered in npm test by "watching stage 1 as a slot turns over".
  { name: "mid-dispatch: a second run started, the rest waiting", trigger: onLaunchRecords(2), runsLive: true },
  { name: "the first run's first metric (the smoke test's signal)", trigger: onFirstMetric(stage1[0]!), runsLive: true },
  {
    name: "between dispatch's saved writes and the checkpoint after them",
    trigger: onLeaderLine("watch", 1, 1),
    afterKill: rollBackNewestCheckpoint,
    runsLive: true,
    everyRun: true,
  },
  {
    name: "a run launched, its run.dispatched event not yet written",
    trigger: onLeaderLine("watch", 1, 1),
    afterKill: (context) => forgetDispatchEvent(context, stage1[1]!),
    runsLive: true,
  },
  {
    name: "watching stage 1 as a slot turns over, and the resume killed as it analyzes",
    trigger: onStderrLine(new RegExp(`^\\s*${escape(stage1[0]!)}: succeeded`)),
    resumeTrigger: onLeaderLine("analyze", 1),
    runsLive: true,
    everyRun: true,
  },
  { name: "watching stage 1 with three results fetched", trigger: onEvent("run.fetched", 3), runsLive: true },
  { name: "analysis of stage 1", trigger: onLeaderLine("analyze", 1, 1) },
  { name: "deciding after stage 1", trigger: onLeaderLine("decide", 1) },
  { name: "design and audit of stage 2", trigger: onLeaderLine("audit", 1, 2) },
  {
    name: "watching stage 2, and the resume killed at its first run change",
    trigger: onLeaderLine("watch", 1, 2),
    resumeTrigger: onStderrLine(new RegExp(`^\\s*(${stage2.map(escape).join("|")}): \\w+ on `)),
    runsLive: true,
  },
  { name: "writing the report", trigger: onLeaderLine("report", 1), mayFinishFirst: true, everyRun: true },
];

const chosenKillPoints = killPoints.filter((point) => slowTests || point.everyRun === true);

interface KillOutcome {
  killed: LeaderRun;
  /** Why `afterKill` could not make the state under test (null: it did). */
  afterKillProblem: string | null;
  killedResume: LeaderRun | undefined;
  resume: CliResult;
  evidence: CampaignEvidence;
  /** Error findings of `a3r audit <campaign folder>` (its module, in this process: no extra start). */
  auditErrors: string[];
}

const campaignId = "kill-resume";
// Most of a campaign is waiting (the leader polls its runs every 2 s), so two campaigns at
// a time fit 2 cores; each is its own runs folder, so they never share the host's slots.
const parallel = Math.max(1, Math.min(3, availableParallelism()));

describe("a3r resume after the leader was SIGKILLed", () => {
  let root: string;
  let topic: string;
  let reference: Promise<{ run: CliResult; evidence: CampaignEvidence; audit: CliResult }>;
  const outcomes = new Map<string, Promise<KillOutcome>>();
  const runsDirs: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "a3r-kill-resume-"));
    topic = await writeFastTopic({ dir: await mkdtemp(join(root, "topic-")) });
    // Campaigns run `parallel` at a time, the reference first; each test awaits its own.
    const queue = limit(parallel);
    const newRunsDir = () => {
      const dir = join(root, `runs-${runsDirs.length}`);
      runsDirs.push(dir);
      return dir;
    };
    reference = queue(async () => {
      const runsDir = newRunsDir();
      const run = await runA3r(["research", topic, "--planner", "heuristic", "--runs-dir", runsDir, "--campaign", campaignId], { timeoutMs: 120_000 });
      return { run, evidence: await collectCampaignEvidence(runsDir, campaignId), audit: await runA3r(["audit", join(runsDir, campaignId)]) };
    });
    for (const point of chosenKillPoints) {
      const runsDir = newRunsDir();
      outcomes.set(
        point.name,
        queue(() => killAndResume(topic, runsDir, point)),
      );
    }
    // Every outcome is awaited by its test; an early failure must not surface as unhandled.
    for (const outcome of [reference, ...outcomes.values()]) outcome.catch(() => undefined);
  });

  afterAll(async () => {
    await Promise.allSettled([reference, ...outcomes.values()]);
    // A failed case may leave runs behind: stop exactly the process groups this file launched.
    for (const runsDir of runsDirs) {
      for (const pgid of Object.values(await launchMarkers({ runsDir, campaignId }))) {
        if (pgid !== null && isGroupAlive(pgid)) process.kill(-pgid, "SIGKILL");
      }
    }
    if (root) await rm(root, { recursive: true, force: true });
  }, 60_000);

  it("runs the fast topic uninterrupted: 6 runs in 2 stages, each launched once, accepted by a3r audit", async () => {
    const { run, evidence, audit } = await reference;
    expect(run.code, run.stderr).toBe(0);
    expect(evidence.stages).toEqual({ 1: [...fastTopicBlueprintIds[0]!], 2: [...fastTopicBlueprintIds[1]!] });
    expect(campaignInvariantProblems(evidence)).toEqual([]);
    expect(campaignOutcome(evidence).stopReason).toBe("separated");
    expect(audit.code, audit.stdout + audit.stderr).toBe(0);
  }, 300_000);

  for (const point of chosenKillPoints) {
    // A case that fails because of a known bug elsewhere is marked `knownBug` (its
    // resumed-campaign check runs as it.fails) until the fix lands; none is open now.
    // The kill itself must reach the moment the case is about; for a known bug this is
    // checked apart, so that its expected failure cannot come from a trigger that missed.
    it(`killed at: ${point.name}${point.knownBug ? " (the kill reaches the state under test)" : ""}`, async () => {
      const { killed, afterKillProblem, killedResume, resume } = await outcomes.get(point.name)!;
      const story = storyOf(killed, resume);
      console.log(`${point.name}: ${landingOf(killed, resume)}`);
      if (!point.mayFinishFirst) expect(killed.killed, `the trigger (${point.trigger.describe}) never fired before the leader ended\n${story}`).toBe(true);
      if (point.runsLive)
        expect(
          Object.values(killed.launchedAtKill).filter((pgid) => pgid !== null).length,
          `no run was started when the leader was killed\n${story}`,
        ).toBeGreaterThan(0);
      expect(afterKillProblem, story).toBeNull();
      if (point.resumeTrigger)
        expect(killedResume?.killed, `the resume's trigger (${point.resumeTrigger.describe}) never fired\n${killedResume?.stderr}`).toBe(true);
      if (!point.knownBug) await expectResumedLikeReference(point);
    }, 300_000);
    if (point.knownBug) {
      it.fails(`killed at: ${point.name} (known bug: the resumed campaign differs)`, async () => {
        await expectResumedLikeReference(point);
      }, 300_000);
    }
  }

  async function expectResumedLikeReference(point: KillPoint): Promise<void> {
    const expected = campaignOutcome((await reference).evidence);
    const { killed, resume, evidence, auditErrors } = await outcomes.get(point.name)!;
    const story = storyOf(killed, resume);
    expect(resume.code, story).toBe(0);
    expect(campaignInvariantProblems(evidence), story).toEqual([]);
    expect(campaignOutcome(evidence), story).toEqual(expected);
    expect(auditErrors).toEqual([]);
  }
});

function storyOf(killed: LeaderRun, resume: CliResult): string {
  return `the killed leader's stderr:\n${killed.stderr}\nthe resume's stderr:\n${resume.stderr}`;
}

/** Where the kill landed and where the last resume picked the campaign up, for the test log. */
function landingOf(killed: LeaderRun, resume: CliResult): string {
  const launched = Object.entries(killed.launchedAtKill).map(([id, pgid]) => `${id}${pgid === null ? " (claimed, not started)" : ""}`);
  return `${killed.killed ? `killed with launch records [${launched.join(", ")}]` : "ended before the kill"}; resumed at ${firstLeaderNode(resume.stderr) ?? "(finished: nothing to do)"}`;
}

async function killAndResume(topic: string, runsDir: string, point: KillPoint): Promise<KillOutcome> {
  const context = { runsDir, campaignId };
  const killed = await runLeaderUntil(["research", topic, "--planner", "heuristic", "--runs-dir", runsDir, "--campaign", campaignId], point.trigger, context);
  const afterKillProblem = point.afterKill && killed.killed ? await point.afterKill(context) : null;
  const killedResume = point.resumeTrigger ? await runLeaderUntil(["resume", campaignId, "--runs-dir", runsDir], point.resumeTrigger, context) : undefined;
  // A resume that has not finished in 90 s hangs: the whole campaign takes 15-30 s.
  const resume = await runA3r(["resume", campaignId, "--runs-dir", runsDir], { timeoutMs: 90_000 });
  const evidence = await collectCampaignEvidence(runsDir, campaignId);
  const audit = await auditPaths([join(runsDir, campaignId)]);
  const auditErrors = audit.findings.filter((finding) => finding.severity === "error").map(formatFinding);
  return { killed, afterKillProblem, killedResume, resume, evidence, auditErrors };
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Runs the given tasks at most `size` at a time, in the order they were queued. */
function limit(size: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (running >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await task();
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
}
