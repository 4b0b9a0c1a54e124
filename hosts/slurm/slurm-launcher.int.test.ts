import { mkdtemp, readFile, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../../campaign/index.ts";
import { fixtureA3rCommand, writeFixtureBlueprint } from "../../test-support/fixture-blueprint.ts";
import { describeLauncherConformance, waitForProgress } from "../../test-support/launcher-conformance.ts";
import { slowTests, slowTierNote } from "../../test-support/slow-tests.ts";
import { slurmMissing, startSlurmCluster, type SlurmClusterHandle } from "../../test-support/slurm-cluster.ts";
import { startSshServer, type SshServerHandle } from "../../test-support/sshd-server.ts";
import { checkHost, openLauncher, resolveCapacity } from "../index.ts";
import type { SshHostConfig } from "../ssh/ssh-kind.ts";
import { LocalShell } from "./cluster-shell.ts";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { jobNameOf } from "./slurm-job.ts";
import { SlurmLauncher } from "./slurm-launcher.ts";

// One real single-node Slurm for the whole file (it starts in about a second).
let cluster: Promise<SlurmClusterHandle> | undefined;
const clusterOnce = () => (cluster ??= startSlurmCluster());
afterAll(async () => {
  await (await cluster?.catch(() => undefined))?.stop();
});

function slurmHost(slurm: SlurmClusterHandle, workdir: string, overrides: Partial<SlurmHostConfig> = {}): SlurmHostConfig {
  return {
    name: "hpc",
    kind: "slurm",
    partition: slurm.partition,
    gres: "gpu",
    sbatch_options: [],
    slurm_conf: slurm.confFile,
    cancel_grace: "5s",
    workdir,
    a3r: fixtureA3rCommand,
    ...overrides,
  };
}

async function jobsNamed(slurm: SlurmClusterHandle, name: string): Promise<string[]> {
  const { stdout } = await slurm.client("squeue", ["-h", "-t", "all", "--name", name, "-o", "%A"]);
  return stdout.split("\n").filter(Boolean);
}

describe.skipIf(slurmMissing !== undefined)(`slurm host${slurmMissing ? ` (skipped: ${slurmMissing})` : ""}`, () => {
  describeLauncherConformance("slurm", async () => {
    const slurm = await clusterOnce();
    const workdir = await mkdtemp(join(tmpdir(), "a3r-slurm-host-"));
    const make = () => new SlurmLauncher({ host: slurmHost(slurm, workdir), shell: new LocalShell() });
    return { launcher: make(), reopen: async () => make(), cleanup: () => rm(workdir, { recursive: true, force: true }) };
  });

  // These cases use their own run ids and mostly wait on Slurm and the workers: they run at once.
  describe.concurrent("slurm launcher against a real Slurm", () => {
    let slurm: SlurmClusterHandle;
    let sshd: SshServerHandle;
    let folder: string;
    const campaign = "slurm-cases";

    beforeAll(async () => {
      [slurm, sshd] = await Promise.all([clusterOnce(), startSshServer()]);
      folder = await mkdtemp(join(tmpdir(), "a3r-slurm-cases-"));
    });
    afterAll(async () => {
      await sshd?.stop();
      await rm(folder, { recursive: true, force: true });
    });

    const launcherWith = (overrides: Partial<SlurmHostConfig> = {}) =>
      new SlurmLauncher({ host: slurmHost(slurm, join(folder, "host"), overrides), shell: new LocalShell() });
    const request = async (id: string, options: { steps?: number; stepMs?: number; gpus?: number } = {}) => ({
      campaign,
      blueprintId: id,
      blueprintFile: await writeFixtureBlueprint(folder, { id, campaign, ...options }),
      gpuIndices: Array.from({ length: options.gpus ?? 0 }, (_, index) => index),
      resultDir: join(folder, "unused", id),
    });
    const jobIdOf = async (id: string) => JSON.parse(await readFile(join(folder, "host", campaign, id, "launch.json"), "utf8")).jobId as string;

    it("shows a waiting job's Slurm reason, then runs it with the GPUs Slurm gave (Gres)", async () => {
      const launcher = launcherWith({ sbatch_options: ["--hold"] });
      const gpus = slurm.gpus > 0 ? 1 : 0;
      const { ref } = await launcher.launch(await request("held", { steps: 2, stepMs: 50, gpus }));
      const waiting = await waitForProgress(launcher, ref, (progress) => progress.state === "queued");
      expect(waiting.reason).toMatch(/waiting in Slurm as job \d+: PENDING \(JobHeldUser\)/);
      await slurm.client("scontrol", ["release", await jobIdOf("held")]);
      const done = await waitForProgress(launcher, ref, (progress) => progress.finished);
      expect(done.state).toBe("succeeded");
      const events = await readEvents(join(folder, "host", campaign, "held", "result", "events.jsonl"));
      const launched = events.events.find((event) => event.kind === "run.launched");
      // Slurm, not a3r, chose the GPU: CUDA_VISIBLE_DEVICES comes from the allocation.
      expect(launched?.gpus).toBe(gpus > 0 ? "0" : "");
    });

    it("ends a run cancelled with scancel from outside with Slurm's reason; one whose worker was killed outright is lost with Slurm's word", async () => {
      const launcher = launcherWith();
      const polite = (await launcher.launch(await request("outside-scancel", { steps: 300, stepMs: 100 }))).ref;
      const hard = (await launcher.launch(await request("outside-kill", { steps: 300, stepMs: 100 }))).ref;
      await waitForProgress(launcher, polite, (progress) => progress.state === "running");
      await waitForProgress(launcher, hard, (progress) => progress.state === "running");
      await slurm.client("scancel", [await jobIdOf("outside-scancel")]);
      // Killed outright (as by the OOM killer or a node going away): no worker left to write its end.
      const status = JSON.parse(await readFile(join(folder, "host", campaign, "outside-kill", "result", "status.json"), "utf8")) as { pid: number };
      process.kill(status.pid, "SIGKILL");
      // The worker's finish.flag may come before Slurm's word on the job: wait for both.
      const cancelled = await waitForProgress(
        launcher,
        polite,
        (progress) => progress.state === "lost" || (progress.finished && /Slurm/.test(progress.reason ?? "")),
      );
      expect(cancelled.state).toBe("cancelled");
      expect(cancelled.reason).toMatch(/SIGTERM; Slurm: job \d+ CANCELLED/);
      const lost = await waitForProgress(launcher, hard, (progress) => progress.finished || progress.state === "lost");
      expect(lost.state).toBe("lost");
      expect(lost.reason).toMatch(/Slurm ended job \d+ as [A-Z_]+.*before its worker finished/);
    });

    it("never submits twice: a leader killed between sbatch and its record finds the job by name", async () => {
      const first = launcherWith();
      const launch = await first.launch(await request("crash-mid-submit", { steps: 20, stepMs: 100 }));
      expect(launch.started).toBe(true);
      // What a leader killed right after sbatch leaves: the job, and no launch.json.
      await unlink(join(folder, "host", campaign, "crash-mid-submit", "launch.json"));
      const restarted = launcherWith();
      const found = await restarted.poll(launch.ref);
      expect(found.state).not.toBe("unknown");
      const again = await restarted.launch(await request("crash-mid-submit", { steps: 20, stepMs: 100 }));
      expect(again.started).toBe(false);
      expect(await jobsNamed(slurm, jobNameOf(launch.ref))).toHaveLength(1);
      const done = await waitForProgress(restarted, launch.ref, (progress) => progress.finished);
      expect(done.state).toBe("succeeded");
      const events = await readEvents(join(folder, "host", campaign, "crash-mid-submit", "result", "events.jsonl"));
      expect(events.events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    });

    it("follows a requeued job: the same job id, not finished while it waits to run again, nothing submitted again", async () => {
      const launcher = launcherWith();
      const launch = await launcher.launch(await request("requeued", { steps: 300, stepMs: 100 }));
      await waitForProgress(launcher, launch.ref, (progress) => progress.state === "running");
      const jobId = await jobIdOf("requeued");
      await slurm.client("scontrol", ["requeue", jobId]);
      // The worker records the requeue's TERM as cancelled; Slurm will start the job again,
      // and that start reopens and resumes the run (slurm-requeue.int.test.ts, with the real
      // worker, follows it to its end): until then it is a run waiting, not a cancelled one.
      const requeued = await waitForProgress(
        launcher,
        launch.ref,
        (progress) => /requeued by Slurm/.test(progress.reason ?? "") && progress.state === "queued",
        60_000,
      );
      expect(requeued.finished).toBe(false);
      expect(requeued.reason).toContain(`requeued by Slurm as job ${jobId}`);
      expect((await launcher.launch(await request("requeued", { steps: 300, stepMs: 100 }))).started).toBe(false);
      expect(await jobsNamed(slurm, jobNameOf(launch.ref))).toEqual([jobId]);
      // A job still waiting is simply taken off the queue; the run then stays as its worker left it.
      expect(await launcher.cancel(launch.ref)).toBe(true);
      const cancelled = await waitForProgress(launcher, launch.ref, (progress) => progress.finished || progress.state === "lost", 60_000);
      expect(cancelled.state).toBe("cancelled");
    }, 120_000);

    it("sets a finished run aside so it launches afresh, its old job never taken for the new run; a running one is refused", async () => {
      const launcher = launcherWith();
      const first = await launcher.launch(await request("again", { steps: 1, stepMs: 50 }));
      await waitForProgress(launcher, first.ref, (progress) => progress.finished);
      const oldJob = await jobIdOf("again");
      expect(await launcher.setAside(first.ref)).toBe(true);
      // squeue still lists the old job under the run's name: it is not this run any more.
      expect(await jobsNamed(slurm, jobNameOf(first.ref))).toEqual([oldJob]);
      expect((await launcher.poll(first.ref)).state).toBe("unknown");
      const second = await launcher.launch(await request("again", { steps: 300, stepMs: 100 }));
      expect(second.started).toBe(true);
      const newJob = await jobIdOf("again");
      expect(newJob).not.toBe(oldJob);
      await waitForProgress(launcher, second.ref, (progress) => progress.state === "running");
      await expect(launcher.setAside(second.ref)).rejects.toMatchObject({ code: "LAUNCH_FAILED" });
      expect(await launcher.cancel(second.ref)).toBe(true);
      const cancelled = await waitForProgress(launcher, second.ref, (progress) => progress.finished);
      expect(cancelled.state).toBe("cancelled");
    });

    it("says why a job whose worker never started ended: Slurm's state and the end of worker.log", async () => {
      const launcher = launcherWith({ a3r: "/nonexistent/a3r" });
      const { ref } = await launcher.launch(await request("no-worker", { steps: 1 }));
      const lost = await waitForProgress(launcher, ref, (progress) => progress.state === "lost");
      expect(lost.reason).toMatch(
        /^Slurm ended job \d+ as FAILED \(NonZeroExitCode\), failed, before its worker finished; worker\.log ends: .*\/nonexistent\/a3r.*not found/,
      );
    });

    it.skipIf(!slowTests)(
      `ends a run over its Slurm time limit with that reason${slowTierNote}`,
      async () => {
        const launcher = launcherWith({ time_limit: "1m" });
        const { ref } = await launcher.launch(await request("over-time", { steps: 3000, stepMs: 100 }));
        const done = await waitForProgress(
          launcher,
          ref,
          (progress) => progress.state === "lost" || (progress.finished && /Slurm/.test(progress.reason ?? "")),
          200_000,
        );
        expect(done.reason).toMatch(/TIMEOUT \(over its Slurm time limit\)/);
      },
      240_000,
    );

    it("learns its capacity from sinfo and passes a3r hosts check, a trivial job included", async () => {
      const host = slurmHost(slurm, join(folder, "host"));
      const launcher = await openLauncher(host);
      try {
        const capacity = await resolveCapacity(host, launcher);
        expect(capacity.gpuIndices).toHaveLength(slurm.gpus);
        expect(capacity.maxRuns).toBe(Math.max(slurm.gpus, slurm.cpus));
      } finally {
        await launcher.close();
      }
      const good = await checkHost(host, { submitJob: true });
      expect(good.problems).toEqual([]);
      expect(good.ok).toBe(true);
      expect(good.gpuCount).toBe(slurm.gpus);
    });

    it("submits, follows and fetches a run with the Slurm commands of the login node", async () => {
      const login: SshHostConfig = {
        name: "login",
        kind: "ssh",
        alias: "login",
        host: "127.0.0.1",
        port: sshd.port,
        user: sshd.user,
        identityFiles: [sshd.userKeyFile],
        host_key: sshd.hostKeyFingerprint,
        gpus: 0,
        workdir: "/unused",
        a3r: fixtureA3rCommand,
      };
      const host = { ...slurmHost(slurm, join(folder, "login-cluster")), login };
      const launcher = await openLauncher(host);
      try {
        const blueprintFile = await writeFixtureBlueprint(folder, { id: "via-login", campaign: "login-case", steps: 2, stepMs: 50 });
        const launch = await launcher.launch({
          campaign: "login-case",
          blueprintId: "via-login",
          blueprintFile,
          gpuIndices: [],
          resultDir: join(folder, "unused"),
        });
        expect(launch.started).toBe(true);
        const done = await waitForProgress(launcher, launch.ref, (progress) => progress.finished);
        expect(done.state).toBe("succeeded");
        const fetched = await launcher.fetch(launch.ref, join(folder, "fetched-via-login"));
        expect(fetched.complete).toBe(true);
        expect(fetched.files).toEqual(expect.arrayContaining(["finish.flag", "result.md", "status.json"]));
      } finally {
        await launcher.close();
      }
    });
  });
});
