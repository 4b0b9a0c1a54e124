import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditResultDir, readEvents, readLedger } from "../campaign/index.ts";
import { writeFixtureBlueprint } from "./fixture-blueprint.ts";
import type { Launcher, RunProgress, RunRef } from "../hosts/port/launcher.ts";

/**
 * The one suite every launcher passes (local, ssh, queue, slurm, ray). A launcher under test runs
 * blueprints with the fixture worker (test-support/fixture-a3r.js), so the suite checks the
 * port, not training.
 *
 * Each `it` uses its own blueprint ids; the setup returns a fresh launcher on a fresh host
 * folder (or queue), and `reopen` gives a second instance on the same host, the way a
 * restarted leader would see it.
 */
export interface LauncherUnderTest {
  launcher: Launcher;
  /** A second, independent launcher for the same host (a restarted leader). */
  reopen(): Promise<Launcher>;
  cleanup(): Promise<void>;
}

export async function waitForProgress(launcher: Launcher, ref: RunRef, done: (progress: RunProgress) => boolean, timeoutMs = 30_000): Promise<RunProgress> {
  const deadline = Date.now() + timeoutMs;
  let last: RunProgress | undefined;
  while (Date.now() < deadline) {
    last = await launcher.poll(ref);
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  throw new Error(`run ${ref.blueprintId} on ${launcher.host} did not reach the expected state within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

export function describeLauncherConformance(name: string, setup: () => Promise<LauncherUnderTest>): void {
  describe(`launcher conformance: ${name}`, () => {
    let subject: LauncherUnderTest;
    let folder: string;
    const campaign = "conformance";

    beforeAll(async () => {
      folder = await mkdtemp(join(tmpdir(), "a3r-conformance-"));
      subject = await setup();
    });

    afterAll(async () => {
      await subject?.cleanup();
      await rm(folder, { recursive: true, force: true });
    });

    const request = async (id: string, options: { steps?: number; stepMs?: number; gpus?: number } = {}) => ({
      campaign,
      blueprintId: id,
      blueprintFile: await writeFixtureBlueprint(folder, { id, campaign, ...options }),
      gpuIndices: [],
      resultDir: join(folder, "local-results", id),
    });

    it("runs a blueprint to a finished, audited result directory and fetches it", async () => {
      const launch = await subject.launcher.launch(await request("runs-to-end", { steps: 3, stepMs: 100 }));
      expect(launch.started).toBe(true);
      const ref = launch.ref;
      const progress = await waitForProgress(subject.launcher, ref, (current) => current.finished);
      expect(progress.state).toBe("succeeded");
      expect(progress.step).toBe(3);
      expect(progress.metricsTail.at(-1)?.reward_mean).toBe(1);
      const destination = join(folder, "fetched", "runs-to-end");
      const fetched = await subject.launcher.fetch(ref, destination);
      expect(fetched.complete).toBe(true);
      expect(fetched.files).toEqual(expect.arrayContaining(["status.json", "metrics.jsonl", "result.md", "finish.flag", "blueprint.md"]));
      const findings = await auditResultDir(destination);
      expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
    });

    it("gives the run's worker its LLM allowance and brings back the worker's own ledger", async () => {
      const launch = await subject.launcher.launch({
        ...(await request("allowance", { steps: 2, stepMs: 50 })),
        llmAllowance: { tokens: 12_345.7, usd: 0.25 },
      });
      await waitForProgress(subject.launcher, launch.ref, (current) => current.finished);
      const destination = join(folder, "fetched", "allowance");
      const fetched = await subject.launcher.fetch(launch.ref, destination);
      expect(fetched.files).toContain("ledger.jsonl");
      const launched = (await readEvents(join(destination, "events.jsonl"))).events.find((event) => event.kind === "run.launched");
      // Whole tokens: the worker's --llm-tokens takes a whole number.
      expect(launched?.llmLimits).toEqual({ tokens: 12_345, usd: 0.25 });
      expect((await readLedger(join(destination, "ledger.jsonl"))).entries.map((entry) => entry.kind === "llm" && entry.role)).toEqual(["diagnose"]);
    });

    it("is idempotent: a second launch, even from another instance, starts nothing", async () => {
      const first = await subject.launcher.launch(await request("launch-once", { steps: 4, stepMs: 150 }));
      const again = await subject.launcher.launch(await request("launch-once", { steps: 4, stepMs: 150 }));
      const other = await subject.reopen();
      try {
        const third = await other.launch(await request("launch-once", { steps: 4, stepMs: 150 }));
        expect([first.started, again.started, third.started]).toEqual([true, false, false]);
        await waitForProgress(other, first.ref, (current) => current.finished);
      } finally {
        await other.close();
      }
      const destination = join(folder, "fetched", "launch-once");
      await subject.launcher.fetch(first.ref, destination);
      const events = await readEvents(join(destination, "events.jsonl"));
      expect(events.events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    });

    it("gives a live copy of status and metrics while the run is going", async () => {
      const { ref } = await subject.launcher.launch(await request("live-copy", { steps: 40, stepMs: 100 }));
      await waitForProgress(subject.launcher, ref, (current) => (current.step ?? 0) >= 2);
      const fetched = await subject.launcher.fetch(ref, join(folder, "fetched", "live-copy"));
      expect(fetched.complete).toBe(false);
      expect(fetched.files).toEqual(expect.arrayContaining(["status.json", "metrics.jsonl"]));
      expect(fetched.files).not.toContain("finish.flag");
      expect(await subject.launcher.cancel(ref)).toBe(true);
      await waitForProgress(subject.launcher, ref, (current) => current.finished);
    });

    it("cancels a running run: the worker ends it as cancelled", async () => {
      const { ref } = await subject.launcher.launch(await request("cancel-me", { steps: 200, stepMs: 100 }));
      await waitForProgress(subject.launcher, ref, (current) => current.state === "running");
      expect(await subject.launcher.cancel(ref)).toBe(true);
      const progress = await waitForProgress(subject.launcher, ref, (current) => current.finished || current.state === "lost");
      expect(progress.state).toBe("cancelled");
      expect(progress.reason).toMatch(/SIGTERM/);
    });

    it("asks a running run's worker to stop early (requestStop), where the host can", async (context) => {
      const requestStop = subject.launcher.requestStop?.bind(subject.launcher);
      if (!requestStop) return context.skip("this host kind has no requestStop: early stopping lets its runs finish");
      const { ref } = await subject.launcher.launch(await request("stop-early", { steps: 200, stepMs: 100 }));
      await waitForProgress(subject.launcher, ref, (current) => (current.step ?? 0) >= 1);
      const stop = { state: "stopped_early" as const, reason: "rung 1: 0.1 is 0.7 worse than the best's 0.8", evidence: { rung: 1 } };
      expect(await requestStop(ref, stop)).toBe(true);
      // Again: harmless (a leader re-run after a crash writes it twice); the run may have finished meanwhile.
      expect(typeof (await requestStop(ref, stop))).toBe("boolean");
      const progress = await waitForProgress(subject.launcher, ref, (current) => current.finished);
      expect(progress.state).toBe("stopped_early");
      expect(progress.reason).toContain("rung 1: 0.1 is 0.7 worse");
      expect(await requestStop(ref, stop)).toBe(false);
      expect(await requestStop({ campaign, blueprintId: "never-launched" }, stop)).toBe(false);
    });

    it("polls many runs at once with the same answers as one by one, in order", async () => {
      const refs = [
        { campaign, blueprintId: "runs-to-end" },
        { campaign, blueprintId: "never-launched" },
        { campaign, blueprintId: "launch-once" },
      ];
      const many = await subject.launcher.pollMany(refs);
      const single = await Promise.all(refs.map((ref) => subject.launcher.poll(ref)));
      expect(many.map((progress) => [progress.ref.blueprintId, progress.state, progress.finished, progress.step])).toEqual(
        single.map((progress) => [progress.ref.blueprintId, progress.state, progress.finished, progress.step]),
      );
      expect(many.map((progress) => progress.state)).toEqual(["succeeded", "unknown", "succeeded"]);
    });

    it("answers unknown for a run it never launched, and lists the ones it did", async () => {
      const unknown = await subject.launcher.poll({ campaign, blueprintId: "never-launched" });
      expect(unknown.state).toBe("unknown");
      expect(unknown.finished).toBe(false);
      expect(await subject.launcher.cancel({ campaign, blueprintId: "never-launched" })).toBe(false);
      const listed = await subject.launcher.list();
      expect(listed).toEqual(
        expect.arrayContaining([
          { campaign, blueprintId: "runs-to-end" },
          { campaign, blueprintId: "launch-once" },
        ]),
      );
      expect(listed.some((ref) => ref.blueprintId === "never-launched")).toBe(false);
    });
  });
}
