import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../campaign/index.ts";
import { isGroupAlive } from "../core/process-group.ts";
import { startLeaderUntil } from "../test-support/background-leader.ts";
import { runA3r } from "../test-support/run-cli.ts";
import { fixtureTopicText } from "../test-support/fixture-topic.ts";

/**
 * The leader and its workers killed together (a container stop, an OOM kill of the tree, a
 * closed terminal): the trainers keep running with nobody watching. `a3r resume` must give
 * each live run a new worker through its host, which re-attaches to the trainer, so the
 * stage is analysed with every run finished and nothing is launched twice.
 */
describe("a3r resume after the leader and its workers were killed", () => {
  let dir: string;
  let runsDir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "a3r-kill-tree-"));
    runsDir = join(dir, "runs");
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("revives the unwatched runs, which finish once each, and analyses all of them", async () => {
    const topic = join(dir, "topic.md");
    // Runs of about 5 s, so they are surely live when the tree is killed.
    await writeFile(topic, fixtureTopicText({ stages: 1, title: "Killed tree" }).replace("--steps 4 --step-ms 50", "--steps 6 --step-ms 800"));
    const { child: leader, exited } = await startLeaderUntil(["research", topic, "--runs-dir", runsDir, "--campaign", "killed-tree"], (stderr) =>
      /s1-lr-0\.01-seed1: running/.test(stderr),
    );

    // Kill the leader and every worker's group (the workers' own process groups; their
    // trainers live in groups of their own, as after a kill of the leader's children).
    const workdir = join(runsDir, ".hosts", "here", "killed-tree");
    const markers = await Promise.all(
      (await readdir(workdir)).map(async (id) => JSON.parse(await readFile(join(workdir, id, "launch.json"), "utf8")) as { pgid: number; resultDir: string }),
    );
    expect(markers).toHaveLength(2);
    leader.kill("SIGKILL");
    for (const marker of markers) {
      try {
        process.kill(-marker.pgid, "SIGKILL");
      } catch {
        // that run's worker had finished already (the smoke test runs first, alone)
      }
    }
    await exited;
    // Their parent died too: init reaps them a moment later.
    for (let waited = 0; markers.some((marker) => isGroupAlive(marker.pgid)) && waited < 10_000; waited += 100)
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    for (const marker of markers) expect(isGroupAlive(marker.pgid)).toBe(false);
    // The runs that were live when their workers died: the smoke test (the baseline, run
    // first and alone) may have finished; the one started after it is surely live.
    const live: string[] = [];
    for (const [index, id] of (await readdir(workdir)).entries()) {
      const status = JSON.parse(await readFile(join(markers[index]!.resultDir, "status.json"), "utf8")) as { state: string };
      if (status.state === "running") live.push(id);
    }
    expect(live).toContain("s1-lr-0.01-seed1");

    const resume = await runA3r(["resume", "killed-tree", "--runs-dir", runsDir], { timeoutMs: 120_000 });
    expect(resume.code, resume.stderr).toBe(0);
    const { events } = await readEvents(join(runsDir, "killed-tree", "events.jsonl"));
    const revived = events.filter((event) => event.kind === "run.revived").map((event) => event.blueprintId);
    expect(revived.sort()).toEqual(live.sort());
    const launches = events.filter((event) => event.kind === "run.dispatched" && event.started === true);
    expect(launches).toHaveLength(2);
    for (const marker of markers) {
      expect((await readFile(join(marker.resultDir, "finish.flag"), "utf8")).trim()).toBe("succeeded");
      // Each step once: the trainer was re-attached to, not started over.
      const steps = (await readFile(join(marker.resultDir, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { step: number }).step);
      expect(new Set(steps).size).toBe(steps.length);
    }
    const report = await readFile(join(runsDir, "killed-tree", "report.md"), "utf8");
    expect(report).not.toMatch(/not counted/);
  }, 180_000);
});
