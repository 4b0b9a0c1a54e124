import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditCampaign, readEvents } from "../campaign/index.ts";
import { runA3r } from "../test-support/run-cli.ts";
import { fixtureTopicText } from "../test-support/fixture-topic.ts";

/**
 * Human review end to end, as a person does it: `a3r research --review` pauses after the
 * plan, an instruction sends it back to planning, approvals let the plan and then the
 * blueprints through, and only then does anything run. Real worker processes, one stage.
 */
describe("review mode", () => {
  let dir: string;
  let runsDir: string;
  let topicFile: string;
  const campaign = "reviewed";

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-review-"));
    runsDir = join(dir, "runs");
    topicFile = join(dir, "topic.md");
    await writeFile(topicFile, fixtureTopicText({ stages: 1, title: "Reviewed fixture campaign" }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const status = async () =>
    JSON.parse((await runA3r(["status", campaign, "--runs-dir", runsDir, "--json"])).stdout) as {
      state: string;
      waitingFor: { stage: number; at: string; round: number } | null;
    };

  it("pauses after the plan and the blueprints, takes an instruction, and runs only what was approved", async () => {
    const research = await runA3r(["research", topicFile, "--runs-dir", runsDir, "--campaign", campaign, "--review"], { timeoutMs: 60_000 });
    expect(research.code, research.stderr).toBe(0);
    expect(research.stdout).toContain("waiting for review of the plan of stage 1 (the topic asks for review)");
    expect(research.stdout).toContain(`a3r resume ${campaign} --runs-dir ${runsDir} --approve`);
    expect(await status()).toMatchObject({ state: "waiting", waitingFor: { stage: 1, at: "plan", round: 0 } });
    expect(await readFile(join(runsDir, campaign, "stages/1/plan.md"), "utf8")).toContain("lr-0.01");

    // Nothing to answer yet with both flags, or with an empty instruction.
    const both = await runA3r(["resume", campaign, "--runs-dir", runsDir, "--approve", "--instruct", "x"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give either --approve or --instruct, not both");
    const empty = await runA3r(["resume", campaign, "--runs-dir", runsDir, "--instruct", "  "]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("--instruct needs the instruction text");

    const instructed = await runA3r(["resume", campaign, "--runs-dir", runsDir, "--instruct", "drop lr=0.01"], { timeoutMs: 60_000 });
    expect(instructed.code, instructed.stderr).toBe(0);
    expect(instructed.stdout).toContain("waiting for review of the plan of stage 1");
    expect(await status()).toMatchObject({ state: "waiting", waitingFor: { stage: 1, at: "plan", round: 1 } });
    const replanned = await readFile(join(runsDir, campaign, "stages/1/plan.md"), "utf8");
    expect(replanned).not.toContain("lr-0.01");
    expect(replanned).toContain("reviewer instructions applied: drop lr=0.01");

    const planApproved = await runA3r(["resume", campaign, "--runs-dir", runsDir, "--approve"], { timeoutMs: 60_000 });
    expect(planApproved.code, planApproved.stderr).toBe(0);
    expect(planApproved.stdout).toContain("waiting for review of the blueprints of stage 1");
    expect(await readdir(join(runsDir, campaign, "stages/1/blueprints"))).toEqual(["s1-baseline-seed1.md"]);

    // A plain resume of a waiting campaign runs nothing and says what it waits for.
    const plain = await runA3r(["resume", campaign, "--runs-dir", runsDir], { timeoutMs: 60_000 });
    expect(plain.stdout).toContain("waiting for review of the blueprints of stage 1");
    await expect(readdir(join(runsDir, campaign, "results"))).resolves.toEqual([]);

    const approved = await runA3r(["resume", campaign, "--runs-dir", runsDir, "--approve"], { timeoutMs: 90_000 });
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout.trim()).toBe(`report: ${join(runsDir, campaign, "report.md")}`);
    expect(await readdir(join(runsDir, campaign, "results"))).toEqual(["s1-baseline-seed1"]);
    expect((await status()).state).toBe("finished");

    const late = await runA3r(["resume", campaign, "--runs-dir", runsDir, "--approve"], { timeoutMs: 60_000 });
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(`campaign ${campaign} is not waiting for review`);

    const { events } = await readEvents(join(runsDir, campaign, "events.jsonl"));
    const reviews = events.filter((event) => event.kind.startsWith("review.")).map((event) => [event.kind, event.at, event.round]);
    expect(reviews).toEqual([
      ["review.requested", "plan", 0],
      ["review.instructed", "plan", 0],
      ["review.requested", "plan", 1],
      ["review.approved", "plan", 1],
      ["review.requested", "blueprints", 1],
      ["review.approved", "blueprints", 1],
    ]);
    expect(events.find((event) => event.kind === "review.instructed")?.instruction).toBe("drop lr=0.01");
    const findings = await auditCampaign(join(runsDir, campaign));
    expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
  }, 240_000);
});
