import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../../campaign/index.ts";
import { fixtureTopicText } from "../../test-support/fixture-topic.ts";
import { a3rEntry, runA3r, withoutModelSettings } from "../../test-support/run-cli.ts";
import { slurmMissing, startSlurmCluster, type SlurmClusterHandle } from "../../test-support/slurm-cluster.ts";

/**
 * A whole campaign through `a3r research --hosts` whose only host is a Slurm cluster (the
 * real single-node one of test-support/slurm-cluster.ts): the leader submits every run with
 * sbatch, follows it with squeue, fetches its result directory and writes the report. The
 * leader is SIGKILLed while it watches stage 1 and resumed: no run is submitted twice.
 */
describe.skipIf(slurmMissing !== undefined)(`a campaign on a Slurm host${slurmMissing ? ` (skipped: ${slurmMissing})` : ""}`, () => {
  let slurm: SlurmClusterHandle;
  let dir: string;

  beforeAll(async () => {
    slurm = await startSlurmCluster();
    dir = await mkdtemp(join(tmpdir(), "a3r-slurm-campaign-"));
  });
  afterAll(async () => {
    await slurm?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("runs to its report with --hosts naming only the Slurm host, a killed leader resumed submitting nothing twice", async () => {
    const runsDir = join(dir, "runs");
    const hostsFile = join(dir, "hosts.yaml");
    await writeFile(
      hostsFile,
      [
        "hosts:",
        "  - name: hpc",
        "    kind: slurm",
        `    partition: ${slurm.partition}`,
        `    slurm_conf: ${slurm.confFile}`,
        `    workdir: ${join(dir, "scratch")}`,
        "",
      ].join("\n"),
    );
    const topic = join(dir, "topic.md");
    // Runs of a few seconds, so the leader is surely still watching when it is killed.
    await writeFile(
      topic,
      fixtureTopicText({ stages: 3, title: "Does lr change the reward on Slurm?" }).replace("--steps 4 --step-ms 50", "--steps 4 --step-ms 1000"),
    );
    const leader = spawn(
      process.execPath,
      [a3rEntry, "research", topic, "--runs-dir", runsDir, "--hosts", hostsFile, "--campaign", "on-slurm", "--max-stages", "1"],
      {
        stdio: ["ignore", "ignore", "pipe"],
        env: { ...withoutModelSettings(process.env), NO_COLOR: "1" },
      },
    );
    let stderr = "";
    await new Promise<void>((resolveWatch, reject) => {
      leader.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("leader: watch (stage 1)")) resolveWatch();
      });
      leader.on("exit", () => reject(new Error(`the leader ended before watching: ${stderr}`)));
    });
    const exited = new Promise((resolveExit) => leader.once("exit", resolveExit));
    leader.kill("SIGKILL");
    await exited;

    // The campaign remembers its hosts file: resume follows the same Slurm jobs.
    const resume = await runA3r(["resume", "on-slurm", "--runs-dir", runsDir], { timeoutMs: 120_000 });
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout.trim()).toBe(`report: ${join(runsDir, "on-slurm", "report.md")}`);
    expect(resume.stderr).toMatch(/s1-lr-0\.01-seed1: succeeded on hpc/);
    expect((await stat(join(runsDir, "on-slurm", "report.md"))).isFile()).toBe(true);

    const { events } = await readEvents(join(runsDir, "on-slurm", "events.jsonl"));
    const dispatched = events.filter((event) => event.kind === "run.dispatched");
    expect(dispatched.every((event) => event.host === "hpc")).toBe(true);
    const launched = dispatched.filter((event) => event.started === true).map((event) => event.blueprintId);
    expect(launched.sort()).toEqual(["s1-baseline-seed1", "s1-lr-0.01-seed1"]);
    // Slurm's own record: one job per run, never a second submission.
    const { stdout } = await slurm.client("squeue", ["-h", "-t", "all", "-o", "%j|%T"]);
    expect(stdout.trim().split("\n").sort()).toEqual(["a3r.on-slurm+s1-baseline-seed1|COMPLETED", "a3r.on-slurm+s1-lr-0.01-seed1|COMPLETED"]);
    // The fetched result directory is the worker's, written inside the allocation (on Slurm's node).
    const status = JSON.parse(await readFile(join(runsDir, "on-slurm", "results", "s1-lr-0.01-seed1", "status.json"), "utf8")) as {
      state: string;
      host: string;
    };
    expect(status).toMatchObject({ state: "succeeded", host: slurm.nodeName });
  }, 180_000);
});
