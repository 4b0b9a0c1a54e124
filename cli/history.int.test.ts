import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents, readRunStatus } from "../campaign/index.ts";
import { fastTopicBlueprintIds, writeFastTopic } from "../test-support/fast-topic.ts";
import { runA3r } from "../test-support/run-cli.ts";

/**
 * Memory across campaigns, end to end: the fast campaign runs once on a committed
 * codebase; a second campaign on the same topic takes every run from the first (no
 * trainer starts), reaches the same report, and `a3r history` lists both. What changes an
 * identity (a new commit, uncommitted code) is leader/history/run-identity.int.test.ts.
 */
describe("a3r history and reused runs", () => {
  let dir: string;
  let codebase: string;
  let runsDir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-history-"));
    codebase = join(dir, "code");
    runsDir = join(dir, "runs");
    await mkdir(codebase);
    await writeFastTopic({ dir: codebase, steps: 3, stepMs: 100 });
    const git = (...args: string[]) => execFileSync("git", ["-C", codebase, ...args], { stdio: "pipe" });
    git("init", "-q");
    git("add", ".");
    git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "fast trainer");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const allIds = fastTopicBlueprintIds.flat();

  it("a second campaign on the same code, config, command and seeds reuses every run and trains nothing", async () => {
    const topic = join(codebase, "topic.md");
    const first = await runA3r(["research", topic, "--runs-dir", runsDir, "--campaign", "first", "--planner", "heuristic"], { timeoutMs: 120_000 });
    expect(first.code, first.stderr).toBe(0);
    const second = await runA3r(["research", topic, "--runs-dir", runsDir, "--campaign", "second", "--planner", "heuristic"], { timeoutMs: 120_000 });
    expect(second.code, second.stderr).toBe(0);

    const { events } = await readEvents(join(runsDir, "second", "events.jsonl"));
    const reused = events.filter((event) => event.kind === "run.reused");
    expect(reused.map((event) => event.blueprintId).sort()).toEqual([...allIds].sort());
    expect(events.some((event) => event.kind === "run.dispatched")).toBe(false);
    for (const id of allIds) {
      const result = join(runsDir, "second", "results", id);
      // The worker never started here: its trainer-start record is the first campaign's only.
      expect(existsSync(join(result, "trainer-starts.jsonl"))).toBe(false);
      expect((await readRunStatus(join(result, "status.json"))).status?.state).toBe("succeeded");
      expect(await readFile(join(result, "result.md"), "utf8")).toContain(`Reused: this result is the run ${join(runsDir, "first", "results", id)}`);
    }
    const stopOf = async (id: string) => (await readEvents(join(runsDir, id, "events.jsonl"))).events.find((event) => event.kind === "campaign.stop_decided");
    expect((await stopOf("second"))?.reason).toBe((await stopOf("first"))?.reason);
    expect((await stopOf("second"))?.best).toBe((await stopOf("first"))?.best);
    // The report cites what the first campaign had found, and that its runs were reused.
    const report = await readFile(join(runsDir, "second", "report.md"), "utf8");
    expect(report).toMatch(/Known before this campaign .*first .*stopped separated.*6 of this campaign's runs were taken from it/s);
    expect(await readFile(join(runsDir, "first", "report.md"), "utf8")).not.toContain("Known before this campaign");
    const audit = await runA3r(["audit", join(runsDir, "second")]);
    expect(audit.code, audit.stdout).toBe(0);

    const history = await runA3r(["history", "--runs-dir", runsDir, "--json"]);
    expect(history.code, history.stderr).toBe(0);
    const listed = JSON.parse(history.stdout) as { campaigns: { id: string; stop: { reason: string } | null }[]; runs: { campaign: string }[] };
    expect(listed.campaigns.map((campaign) => campaign.id)).toEqual(["first", "second"]);
    expect(listed.campaigns[0]?.stop?.reason).toBe("separated");
    expect(listed.runs.filter((run) => run.campaign === "first")).toHaveLength(allIds.length);
    const text = await runA3r(["history", "--runs-dir", runsDir]);
    expect(text.stdout).toMatch(/first .* 6 run\(s\)/);
  });
});
