import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditResultDir, readEvents } from "../campaign/index.ts";
import { startLeaderUntil } from "../test-support/background-leader.ts";
import { runA3r } from "../test-support/run-cli.ts";
import { fixtureTopicText } from "../test-support/fixture-topic.ts";

/**
 * `a3r stop CAMPAIGN` mid-stage: the leader stops first, every live run is stopped through
 * its worker (TERM, grace, KILL) and ends `cancelled` with a complete result directory;
 * `a3r resume` then runs the stopped runs again and finishes the campaign.
 */
describe("a3r stop", () => {
  let dir: string;
  let runsDir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-stop-"));
    runsDir = join(dir, "runs");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("stops the leader and its runs cleanly, and resume runs them again to the report", async () => {
    const topic = join(dir, "topic.md");
    // Every run waits after step 3 until `go` exists, so both are live when the stop comes,
    // however slow this machine is; `go` is written before the resume.
    const go = join(dir, "go");
    await writeFile(
      topic,
      fixtureTopicText({ stages: 1, title: "Stop me" }).replace("--steps 4 --step-ms 50", `--steps 8 --step-ms 100 --pause-after 3 --until-file ${go}`),
    );
    const { exited } = await startLeaderUntil(["research", topic, "--runs-dir", runsDir, "--campaign", "stop-me"], (stderr) =>
      /s1-lr-0\.01-seed1: running/.test(stderr),
    );

    const stop = await runA3r(["stop", "stop-me", "--runs-dir", runsDir], { timeoutMs: 60_000 });
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stdout).toMatch(/^leader: stopped$/m);
    expect(stop.stdout).toMatch(/^s1-baseline-seed1 on here: stopped$/m);
    expect(stop.stdout).toMatch(/^s1-lr-0\.01-seed1 on here: stopped$/m);
    const stopped = [...stop.stdout.matchAll(/^(\S+) on here: stopped$/gm)].map((match) => match[1]!).sort();
    await exited;
    for (const id of stopped) {
      const result = join(runsDir, "stop-me", "results", id);
      expect((await readFile(join(result, "finish.flag"), "utf8")).trim()).toBe("cancelled");
      expect((await auditResultDir(result)).filter((finding) => finding.severity === "error")).toEqual([]);
    }
    const status = JSON.parse((await runA3r(["status", "stop-me", "--runs-dir", runsDir, "--json"])).stdout) as { state: string };
    expect(status.state).toBe("stopped");

    await writeFile(go, "");
    const resume = await runA3r(["resume", "stop-me", "--runs-dir", runsDir], { timeoutMs: 120_000 });
    expect(resume.code, resume.stderr).toBe(0);
    const { events } = await readEvents(join(runsDir, "stop-me", "events.jsonl"));
    expect(
      events
        .filter((event) => event.kind === "run.restarted")
        .map((event) => event.blueprintId)
        .sort(),
    ).toEqual(stopped);
    for (const id of ["s1-baseline-seed1", "s1-lr-0.01-seed1"]) {
      expect((await readFile(join(runsDir, "stop-me", "results", id, "finish.flag"), "utf8")).trim()).toBe("succeeded");
    }
    expect(await readFile(join(runsDir, "stop-me", "report.md"), "utf8")).not.toMatch(/not counted/);

    const unknown = await runA3r(["stop", "stop-me/no-such-run", "--runs-dir", runsDir]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/never launched no-such-run/);
  }, 240_000);
});
