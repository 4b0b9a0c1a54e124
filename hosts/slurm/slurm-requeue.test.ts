import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellQuote } from "../../core/shell-quote.ts";
import { LocalShell } from "./cluster-shell.ts";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { batchScript, signalArgument } from "./slurm-job.ts";
import { SlurmLauncher } from "./slurm-launcher.ts";
import { parseRestarts, parseSlurmStart, slurmProgress, type SlurmJobView } from "./slurm-states.ts";

const run = promisify(execFile);
const ref = { campaign: "c1", blueprintId: "b1" };
const name = "a3r.c1+b1";
const launch = JSON.stringify({
  ...ref,
  host: "hpc",
  resultDir: "/w/c1/b1/result",
  gpuIndices: [],
  pgid: null,
  launchedAt: "2020-01-01T00:00:00.000Z",
  jobId: "41",
});
const status = (state: string) =>
  `${JSON.stringify({ state, attempt: 1, host: "n1", pid: 7, pgid: 7, startedAt: "2020-01-01T00:00:01.000Z", heartbeatAt: "2020-01-01T00:00:02.000Z", step: 3, lastMetrics: { nested: 1 }, reason: "cancelled by SIGTERM" }, null, 2)}\n`;
const job = (state: string, restarts?: number): SlurmJobView => ({
  jobId: "41",
  name,
  state,
  reason: "",
  source: "squeue",
  ...(restarts === undefined ? {} : { restarts }),
});
const cancelledFiles = { launch, status: status("cancelled"), finish: "cancelled\n" };

describe("a requeued Slurm job is the same run, not a cancelled one", () => {
  it("keeps a run its requeue's TERM ended cancelled unfinished until the next start resumes it", () => {
    const waiting = slurmProgress(ref, "hpc", cancelledFiles, job("PENDING", 1), new Date(), { job: "41", restart: 0 });
    expect([waiting.state, waiting.finished]).toEqual(["queued", false]);
    expect(waiting.reason).toBe("requeued by Slurm as job 41 (PENDING): the requeue's TERM ended start 1 as cancelled, start 2 resumes the run");
    // Still being killed by the requeue, or already running again before its script reopened the run.
    expect(slurmProgress(ref, "hpc", cancelledFiles, job("COMPLETING", 1), new Date(), { job: "41", restart: 0 }).finished).toBe(false);
    expect(slurmProgress(ref, "hpc", cancelledFiles, job("RUNNING", 1), new Date(), { job: "41", restart: 0 }).state).toBe("launching");
    // a3r's own cancel, or scancel: the job is not restarted, the run is cancelled.
    const cancelled = slurmProgress(ref, "hpc", cancelledFiles, job("COMPLETING", 0), new Date(), { job: "41", restart: 0 });
    expect([cancelled.state, cancelled.finished]).toEqual(["cancelled", true]);
    // The second start's own cancel (restart 1 recorded): cancelled for good.
    expect(slurmProgress(ref, "hpc", cancelledFiles, job("RUNNING", 1), new Date(), { job: "41", restart: 1 }).finished).toBe(true);
    // A run that succeeded before the requeue stays succeeded.
    const done = slurmProgress(ref, "hpc", { launch, status: status("succeeded"), finish: "succeeded\n" }, job("PENDING", 1), new Date(), {
      job: "41",
      restart: 0,
    });
    expect([done.state, done.finished]).toEqual(["succeeded", true]);
    // An squeue without RestartCnt: waiting again after the end is the requeue.
    expect(slurmProgress(ref, "hpc", cancelledFiles, job("PENDING"), new Date(), undefined).finished).toBe(false);
    expect(slurmProgress(ref, "hpc", cancelledFiles, job("RUNNING"), new Date(), undefined).finished).toBe(true);
  });

  it("reads squeue's restart counts and the run's last start", () => {
    expect(parseRestarts("41                  2                   \n42                  0\nJOBID RESTARTCNT\n")).toEqual(
      new Map([
        ["41", 2],
        ["42", 0],
      ]),
    );
    expect(parseSlurmStart('{"at":"2026-01-01T00:00:00.000Z","job":"41","restart":1,"node":"n1"}\n')).toEqual({ job: "41", restart: 1 });
    expect(parseSlurmStart("{torn")).toBeUndefined();
  });

  it("tells the worker before the time limit only where Slurm's minute resolution allows", () => {
    expect(signalArgument(undefined, 65_000)).toBeUndefined();
    expect(signalArgument(5, 65_000)).toBeUndefined();
    expect(signalArgument(66, 65_000)).toBe("--signal=B:TERM@65");
    expect(signalArgument(10, 600_000)).toBe("--signal=B:TERM@150");
  });
});

describe("the batch script's requeue reopening (run with sh)", () => {
  let folder: string;
  const host: SlurmHostConfig = { name: "hpc", kind: "slurm", gres: "gpu", sbatch_options: [], workdir: "/w", a3r: "echo a3r" };
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-requeue-script-"));
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  const start = async (runDir: string, restart: number | undefined, extra: Record<string, string> = {}) => {
    const script = join(runDir, "job.sh");
    await writeFile(script, batchScript({ ref, host, runDir, gpus: 0, timeLimitMinutes: 5 }));
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      SLURM_JOB_ID: "41",
      ...(restart === undefined ? {} : { SLURM_RESTART_COUNT: String(restart) }),
      ...extra,
    };
    return run("sh", [script], { env });
  };
  const lines = async (file: string) =>
    (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it("records every start, and reopens a run its requeue ended cancelled so the worker resumes it", async () => {
    const runDir = join(folder, "requeued");
    await mkdir(join(runDir, "result"), { recursive: true });
    expect((await start(runDir, undefined)).stdout).toContain("a3r worker run");
    // What the first start's worker left when the requeue's TERM reached it.
    await writeFile(join(runDir, "result", "status.json"), status("cancelled"));
    await writeFile(join(runDir, "result", "finish.flag"), "cancelled\n");
    await writeFile(join(runDir, "result", "result.md"), "# cancelled\n");
    await writeFile(join(runDir, "result", "events.jsonl"), "");
    await start(runDir, 1);
    const reopened = JSON.parse(await readFile(join(runDir, "result", "status.json"), "utf8")) as Record<string, unknown>;
    expect(reopened).toEqual({
      ...(JSON.parse(status("cancelled")) as object),
      state: "recovering",
      reason: "requeued by Slurm (job 41): start 2 resumes the run",
    });
    await expect(readFile(join(runDir, "result", "finish.flag"))).rejects.toMatchObject({ code: "ENOENT" });
    expect(await readFile(join(runDir, "result", "requeued", "1", "finish.flag"), "utf8")).toBe("cancelled\n");
    expect(await readFile(join(runDir, "result", "requeued", "1", "result.md"), "utf8")).toBe("# cancelled\n");
    expect((await lines(join(runDir, "result", "slurm-starts.jsonl"))).map((line) => [line.job, line.restart])).toEqual([
      ["41", 0],
      ["41", 1],
    ]);
    expect(await lines(join(runDir, "result", "events.jsonl"))).toEqual([
      expect.objectContaining({ kind: "run.requeued", job: "41", start: 2, previous: "cancelled" }),
    ]);
  });

  it("reopens a run whose worker Slurm's KILL cut off after its cancelled status, before finish.flag", async () => {
    const runDir = join(folder, "cut-off");
    await mkdir(join(runDir, "result"), { recursive: true });
    // KillWait ran out while the first start's worker was finishing: status.json says cancelled, no finish.flag.
    await writeFile(join(runDir, "result", "status.json"), status("cancelled"));
    await writeFile(join(runDir, "result", "events.jsonl"), "");
    await start(runDir, 1);
    const reopened = JSON.parse(await readFile(join(runDir, "result", "status.json"), "utf8")) as Record<string, unknown>;
    expect(reopened).toMatchObject({ state: "recovering", reason: "requeued by Slurm (job 41): start 2 resumes the run" });
    expect(await readFile(join(runDir, "result", "requeued", "1", "status.json"), "utf8")).toBe(status("cancelled"));
    await expect(readFile(join(runDir, "result", "finish.flag"))).rejects.toMatchObject({ code: "ENOENT" });
    expect(await lines(join(runDir, "result", "events.jsonl"))).toEqual([
      expect.objectContaining({ kind: "run.requeued", job: "41", start: 2, previous: "cancelled" }),
    ]);
    // A run that ended otherwise and lost only its finish.flag is the worker's to finish.
    const other = join(folder, "cut-off-succeeded");
    await mkdir(join(other, "result"), { recursive: true });
    await writeFile(join(other, "result", "status.json"), status("succeeded"));
    await start(other, 1);
    expect(await readFile(join(other, "result", "status.json"), "utf8")).toBe(status("succeeded"));
  });

  it("leaves a status.json alone that is not written as the worker writes it, and says so in worker.log", async () => {
    const runDir = join(folder, "compact");
    await mkdir(join(runDir, "result"), { recursive: true });
    const compact = `${JSON.stringify(JSON.parse(status("cancelled")))}\n`;
    await writeFile(join(runDir, "result", "status.json"), compact);
    await writeFile(join(runDir, "result", "finish.flag"), "cancelled\n");
    const { stderr } = await start(runDir, 1);
    expect(stderr).toContain('a3r job.sh: start 2 of requeued job 41 could not reopen the run: result/status.json has no top-level "state": "cancelled" line');
    expect(await readFile(join(runDir, "result", "status.json"), "utf8")).toBe(compact);
    expect(await readFile(join(runDir, "result", "finish.flag"), "utf8")).toBe("cancelled\n");
    await expect(readFile(join(runDir, "result", ".status-reopen.json"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("leaves a run alone that a3r cancelled, or that ended otherwise", async () => {
    for (const [id, end, cancelRequested] of [
      ["a3r-cancelled", "cancelled", true],
      ["succeeded", "succeeded", false],
    ] as const) {
      const runDir = join(folder, id);
      await mkdir(join(runDir, "result"), { recursive: true });
      if (cancelRequested) await writeFile(join(runDir, "cancel-requested"), "");
      await writeFile(join(runDir, "result", "status.json"), status(end));
      await writeFile(join(runDir, "result", "finish.flag"), `${end}\n`);
      await start(runDir, 1);
      expect(await readFile(join(runDir, "result", "status.json"), "utf8")).toBe(status(end));
      expect(await readFile(join(runDir, "result", "finish.flag"), "utf8")).toBe(`${end}\n`);
    }
  });
});

/** LocalShell with fake Slurm commands (and a `tail` with a hook) first on PATH. */
class FakeSlurmShell extends LocalShell {
  constructor(private readonly bin: string) {
    super();
  }
  override exec(script: string, options: { idempotent: boolean; timeoutMs?: number }) {
    return super.exec(`PATH=${shellQuote(this.bin)}:$PATH; export PATH\n${script}`, options);
  }
}

describe("a poll racing a requeue", () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-requeue-poll-"));
  });
  afterAll(() => rm(folder, { recursive: true, force: true }));

  /**
   * A run folder whose start 1 is recorded, with fake `squeue`/`sacct` and a `tail` that
   * runs `hook` once (before or after its own reading, as `when` says) when its arguments
   * match `on`: what the cluster does between two of the poll's reads.
   */
  async function racedRun(id: string, squeue: string, hook: { on: string; when: "before" | "after"; script: string }) {
    const workdir = join(folder, id);
    const runDir = join(workdir, "c1", "b1");
    const bin = join(folder, id, "bin");
    await mkdir(join(runDir, "result"), { recursive: true });
    await mkdir(bin);
    const host: SlurmHostConfig = { name: "hpc", kind: "slurm", gres: "gpu", sbatch_options: [], workdir, a3r: "echo a3r" };
    await writeFile(join(runDir, "launch.json"), launch);
    await writeFile(join(runDir, "job.sh"), batchScript({ ref, host, runDir, gpus: 0, timeLimitMinutes: 5 }));
    await writeFile(join(runDir, "result", "slurm-starts.jsonl"), '{"at":"2020-01-01T00:00:00.000Z","job":"41","restart":0,"node":"n1"}\n');
    await writeFile(join(runDir, "result", "events.jsonl"), "");
    const realTail = (await run("sh", ["-c", "command -v tail"])).stdout.trim();
    const done = shellQuote(join(folder, id, "hook-done"));
    const runHook = `case "$*" in ${hook.on}) if [ ! -e ${done} ]; then : > ${done}; (cd ${shellQuote(runDir)} && ${hook.script}) >/dev/null 2>&1; fi;; esac`;
    const fakes: Record<string, string> = {
      squeue,
      sacct: "exit 1",
      tail: [
        ...(hook.when === "before" ? [runHook] : []),
        `${shellQuote(realTail)} "$@"; code=$?`,
        ...(hook.when === "after" ? [runHook] : []),
        "exit $code",
      ].join("\n"),
    };
    for (const [name, body] of Object.entries(fakes)) {
      await writeFile(join(bin, name), `#!/bin/sh\n${body}\n`);
      await chmod(join(bin, name), 0o755);
    }
    return { runDir, launcher: new SlurmLauncher({ host, shell: new FakeSlurmShell(bin) }) };
  }

  it("never pairs the new start's record with the cancelled end that start reopens", async () => {
    // Start 1 ended cancelled by the requeue's TERM; Slurm runs the job again (restart 1),
    // and its job.sh runs right after the poll has read the run's status: the worst moment,
    // which a loaded machine reaches by chance.
    const { runDir, launcher } = await racedRun("reopening", 'case "$*" in *RestartCnt*) echo "41 1";; *) echo "41|a3r.c1+b1|RUNNING|None";; esac', {
      on: "*result/status.json*",
      when: "after",
      script: "SLURM_RESTART_COUNT=1 SLURM_JOB_ID=41 sh job.sh",
    });
    await writeFile(join(runDir, "result", "status.json"), status("cancelled"));
    await writeFile(join(runDir, "result", "finish.flag"), "cancelled\n");
    const during = await launcher.poll(ref);
    expect([during.state, during.finished]).toEqual(["launching", false]);
    expect(during.reason).toMatch(/^requeued by Slurm as job 41 \(RUNNING\)/);
    // The start has reopened the run and recorded itself.
    expect((await readFile(join(runDir, "result", "slurm-starts.jsonl"), "utf8")).trim().split("\n")).toHaveLength(2);
    const after = await launcher.poll(ref);
    expect([after.state, after.finished]).toEqual(["recovering", false]);
  });

  it("never takes a preemption that lands between Slurm's answer and the files for a final cancel", async () => {
    // Start 1 running when the poll asks Slurm; then the preemption (Slurm counts the
    // restart, then TERMs the worker, which records its cancelled end) before the files are read.
    const preempted = shellQuote(join(folder, "preempted"));
    const { runDir, launcher } = await racedRun(
      "preemption",
      `case "$*" in *RestartCnt*) if [ -e ${preempted} ]; then echo "41 1"; else echo "41 0"; fi;; *) echo "41|a3r.c1+b1|RUNNING|None";; esac`,
      { on: "*", when: "before", script: `: > ${preempted} && cp result/status.cancelled result/status.json && echo cancelled > result/finish.flag` },
    );
    await writeFile(join(runDir, "result", "status.json"), status("running"));
    await writeFile(join(runDir, "result", "status.cancelled"), status("cancelled"));
    const during = await launcher.poll(ref);
    expect([during.state, during.finished]).toEqual(["launching", false]);
    expect(during.reason).toMatch(/^requeued by Slurm as job 41 \(RUNNING\)/);
  });
});
