import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readEvents } from "../../campaign/index.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { describeLauncherConformance, waitForProgress } from "../../test-support/launcher-conformance.ts";
import { LocalLauncher } from "./local-launcher.ts";

describeLauncherConformance("local", async () => {
  const workdir = await mkdtemp(join(tmpdir(), "a3r-local-host-"));
  const make = () => new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
  return {
    launcher: make(),
    reopen: async () => make(),
    cleanup: () => rm(workdir, { recursive: true, force: true }),
  };
});

describe("local launcher: runs nobody will finish", () => {
  it("reports lost when the run's process group is gone without finish.flag; a claim whose worker never started is launched again", async () => {
    const workdir = await mkdtemp(join(tmpdir(), "a3r-local-lost-"));
    const launcher = new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
    try {
      const write = async (id: string, pgid: number | null, launchedAt: string) => {
        await mkdir(join(workdir, "lost", id), { recursive: true });
        await writeFile(
          join(workdir, "lost", id, "launch.json"),
          JSON.stringify({ campaign: "lost", blueprintId: id, host: "here", resultDir: join(workdir, "results", id), gpuIndices: [], pgid, launchedAt }),
        );
      };
      const old = new Date(Date.now() - 60_000).toISOString();
      // A process that has exited: its pid names no live group any more.
      const exited = spawnSync("true").pid!;
      await write("died", exited, old);
      await write("never-started", null, old);
      await write("just-started", null, new Date().toISOString());
      const [died, never, young] = await launcher.pollMany(["died", "never-started", "just-started"].map((blueprintId) => ({ campaign: "lost", blueprintId })));
      expect(died!.state).toBe("lost");
      // The launcher died between its claim and the spawn: no run, so launching it starts one.
      expect(never!.state).toBe("unknown");
      expect(young!.state).toBe("launching");
      const blueprintFile = join(workdir, "blueprint.md");
      await writeFile(blueprintFile, "not read by the fixture worker\n");
      const relaunch = await launcher.launch({
        campaign: "lost",
        blueprintId: "never-started",
        blueprintFile,
        gpuIndices: [],
        resultDir: join(workdir, "results", "never-started"),
      });
      expect(relaunch.started).toBe(true);
      expect(relaunch.pgid).not.toBeNull();
      const young2 = await launcher.launch({
        campaign: "lost",
        blueprintId: "just-started",
        blueprintFile,
        gpuIndices: [],
        resultDir: join(workdir, "results", "just-started"),
      });
      expect(young2.started).toBe(false);
      expect((await readdir(join(workdir, "lost", "never-started"))).some((name) => name.startsWith("launch.never-started-"))).toBe(true);
      await launcher.cancel({ campaign: "lost", blueprintId: "never-started" });

      // A lost run is launched again only when asked to revive it: a new worker then takes
      // the same result directory over, and the dead claim is kept aside.
      const fixture = await writeFixtureBlueprint(workdir, { id: "died", campaign: "lost", steps: 2, stepMs: 50 });
      const died2 = { campaign: "lost", blueprintId: "died", blueprintFile: fixture, gpuIndices: [], resultDir: join(workdir, "results", "died") };
      expect((await launcher.launch(died2)).started).toBe(false);
      const revived = await launcher.launch({ ...died2, revive: true });
      expect(revived.started).toBe(true);
      expect((await readdir(join(workdir, "lost", "died"))).some((name) => name.startsWith("launch.worker-gone-"))).toBe(true);
      expect((await waitForProgress(launcher, revived.ref, (progress) => progress.finished)).state).toBe("succeeded");
      // A finished run is never revived.
      expect((await launcher.launch({ ...died2, revive: true })).started).toBe(false);
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  });

  it("says why a launch died at once: the worker's own last output (here: the host's a3r command does not exist)", async () => {
    const workdir = await mkdtemp(join(tmpdir(), "a3r-local-died-"));
    const launcher = new LocalLauncher({ host: "here", workdir, a3r: "/nonexistent/a3r" });
    try {
      const blueprintFile = await writeFixtureBlueprint(workdir, { id: "no-a3r", campaign: "died" });
      const { ref } = await launcher.launch({
        campaign: "died",
        blueprintId: "no-a3r",
        blueprintFile,
        gpuIndices: [],
        resultDir: join(workdir, "results", "no-a3r"),
      });
      const lost = await waitForProgress(launcher, ref, (progress) => progress.state === "lost", 30_000);
      expect(lost.reason).toMatch(/worker's last output: .*\/nonexistent\/a3r.*not found/);
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  });

  it("takes over an empty launch.json past the grace (a launcher killed mid-write), and leaves a young one alone", async () => {
    const workdir = await mkdtemp(join(tmpdir(), "a3r-local-empty-"));
    const launcher = new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand });
    try {
      for (const id of ["empty-old", "empty-young"]) {
        await mkdir(join(workdir, "cut", id), { recursive: true });
        await writeFile(join(workdir, "cut", id, "launch.json"), "");
      }
      const minuteAgo = new Date(Date.now() - 60_000);
      await utimes(join(workdir, "cut", "empty-old", "launch.json"), minuteAgo, minuteAgo);
      const blueprintFile = join(workdir, "blueprint.md");
      await writeFile(blueprintFile, "not read by the fixture worker\n");
      const request = (blueprintId: string) => ({
        campaign: "cut",
        blueprintId,
        blueprintFile,
        gpuIndices: [],
        resultDir: join(workdir, "results", blueprintId),
      });
      expect((await launcher.poll({ campaign: "cut", blueprintId: "empty-old" })).state).toBe("unknown");
      const taken = await launcher.launch(request("empty-old"));
      expect(taken.started).toBe(true);
      expect((await launcher.readMarker({ campaign: "cut", blueprintId: "empty-old" }))?.pgid).toBe(taken.pgid);
      expect((await readdir(join(workdir, "cut", "empty-old"))).some((name) => name.startsWith("launch.unreadable-"))).toBe(true);
      // Within the grace an unreadable claim may still be someone's: it is not taken.
      expect((await launcher.launch(request("empty-young"))).started).toBe(false);
      // No private drafts are left beside the claims.
      for (const id of ["empty-old", "empty-young"]) expect((await readdir(join(workdir, "cut", id))).filter((name) => name.endsWith(".draft"))).toEqual([]);
      await launcher.cancel({ campaign: "cut", blueprintId: "empty-old" });
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  });

  it("starts exactly one run when several launchers take over the same abandoned claim at once", async () => {
    // The moment the takeover lock closes (two launchers judging the claim abandoned
    // together) is too short to hit from outside; this checks that concurrent takeovers
    // stay exactly-once and that the lock lets every launcher through.
    const workdir = await mkdtemp(join(tmpdir(), "a3r-local-takeover-"));
    try {
      await mkdir(join(workdir, "race", "abandoned"), { recursive: true });
      await writeFile(
        join(workdir, "race", "abandoned", "launch.json"),
        JSON.stringify({
          campaign: "race",
          blueprintId: "abandoned",
          host: "here",
          resultDir: join(workdir, "results", "abandoned"),
          gpuIndices: [],
          pgid: null,
          launchedAt: new Date(Date.now() - 60_000).toISOString(),
        }),
      );
      const blueprintFile = await writeFixtureBlueprint(workdir, { id: "abandoned", campaign: "race", steps: 1, stepMs: 10 });
      const launchers = Array.from({ length: 6 }, () => new LocalLauncher({ host: "here", workdir, a3r: fixtureA3rCommand }));
      const outcomes = await Promise.all(
        launchers.map((launcher) =>
          launcher.launch({ campaign: "race", blueprintId: "abandoned", blueprintFile, gpuIndices: [], resultDir: join(workdir, "results", "abandoned") }),
        ),
      );
      expect(outcomes.filter((outcome) => outcome.started)).toHaveLength(1);
      await waitForProgress(launchers[0]!, { campaign: "race", blueprintId: "abandoned" }, (progress) => progress.finished);
      const events = await readEvents(join(workdir, "results", "abandoned", "events.jsonl"));
      expect(events.events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  });

  it("leaves the LLM allowance out for a run in a campaign folder: there the worker is held to the campaign's live budget", async () => {
    const campaignRoot = await mkdtemp(join(tmpdir(), "a3r-local-campaign-"));
    const launcher = new LocalLauncher({ host: "here", workdir: join(campaignRoot, "host"), a3r: fixtureA3rCommand });
    try {
      await writeFile(join(campaignRoot, "topic.md"), "Which lr?\n");
      const blueprintFile = await writeFixtureBlueprint(campaignRoot, { id: "in-campaign", campaign: "c", steps: 1, stepMs: 10 });
      const resultDir = join(campaignRoot, "results", "in-campaign");
      const launch = await launcher.launch({
        campaign: "c",
        blueprintId: "in-campaign",
        blueprintFile,
        gpuIndices: [],
        resultDir,
        llmAllowance: { tokens: 100 },
      });
      await waitForProgress(launcher, launch.ref, (progress) => progress.finished);
      const launched = (await readEvents(join(resultDir, "events.jsonl"))).events.find((event) => event.kind === "run.launched");
      expect(launched).toBeDefined();
      expect(launched!.llmLimits).toBeUndefined();
    } finally {
      await rm(campaignRoot, { recursive: true, force: true });
    }
  });
});
