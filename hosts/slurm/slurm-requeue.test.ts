import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { batchScript, signalArgument } from "./slurm-job.ts";
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
