import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../campaign/index.ts";
import { runA3r } from "../test-support/run-cli.ts";
import { fixtureTopicText } from "../test-support/fixture-topic.ts";

/**
 * A damaged leader.sqlite, as a full disk or a copy cut short leaves it: resume says what is
 * wrong and how to recover, audit reports it, and `resume --rebuild` replays the campaign
 * into a fresh checkpoint without running a finished experiment again.
 */
describe("a3r resume --rebuild", () => {
  let dir: string;
  let runsDir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-rebuild-"));
    runsDir = join(dir, "runs");
    await writeFile(join(dir, "topic.md"), fixtureTopicText({ stages: 1, title: "Rebuild me" }));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("names the damage, audits it as an error, and replays into a fresh checkpoint", async () => {
    const research = await runA3r(["research", join(dir, "topic.md"), "--runs-dir", runsDir, "--campaign", "rebuild-me"], { timeoutMs: 90_000 });
    expect(research.code, research.stderr).toBe(0);
    const campaign = join(runsDir, "rebuild-me");
    const launched = async () =>
      (await readEvents(join(campaign, "events.jsonl"))).events.filter((event) => event.kind === "run.dispatched" && event.started === true).length;
    const launchesBefore = await launched();
    expect(launchesBefore).toBeGreaterThan(0);

    await writeFile(join(campaign, "leader.sqlite"), "this is not a database, a copy cut it short\n");
    const refused = await runA3r(["resume", "rebuild-me", "--runs-dir", runsDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/leader\.sqlite is not a SQLite database/);
    expect(refused.stderr).toMatch(/a3r resume rebuild-me --rebuild/);
    expect(refused.stderr).not.toMatch(/INTERNAL|report it/i);

    const audit = await runA3r(["audit", campaign]);
    expect(audit.code).not.toBe(0);
    expect(audit.stdout + audit.stderr).toMatch(/CAMPAIGN_CHECKPOINT_UNREADABLE/);

    const rebuilt = await runA3r(["resume", "rebuild-me", "--runs-dir", runsDir, "--rebuild"], { timeoutMs: 90_000 });
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(rebuilt.stderr).toMatch(/rebuild: the old checkpoint is now .*leader\.sqlite\.set-aside-/);
    expect(rebuilt.stdout.trim()).toBe(`report: ${join(campaign, "report.md")}`);
    expect(await launched()).toBe(launchesBefore);
    expect((await readdir(campaign)).filter((name) => name.startsWith("leader.sqlite.set-aside-"))).toHaveLength(1);
    const clean = await runA3r(["audit", campaign]);
    expect(clean.stdout + clean.stderr).not.toMatch(/CAMPAIGN_CHECKPOINT_UNREADABLE/);
  }, 180_000);
});
