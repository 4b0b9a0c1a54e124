import { describe, expect, it } from "vitest";
import { parseSlurmCheck } from "./slurm-check.ts";
import { gpusInGres, parseSinfo } from "./sinfo.ts";
import { batchScript, sbatchArguments, timeLimitMinutes } from "./slurm-job.ts";
import type { SlurmHostConfig } from "./slurm-config.ts";
import { jobOfRun, parseSacct, parseSqueue, slurmProgress } from "./slurm-states.ts";

const ref = { campaign: "c1", blueprintId: "b1" };
const name = "a3r.c1+b1";
const launchedLongAgo = JSON.stringify({
  campaign: "c1",
  blueprintId: "b1",
  host: "hpc",
  resultDir: "/w/c1/b1/result",
  gpuIndices: [],
  pgid: null,
  launchedAt: "2020-01-01T00:00:00.000Z",
  jobId: "41",
});
const statusOf = (state: string, reason: string | null) =>
  JSON.stringify({
    state,
    attempt: 1,
    host: "hpc",
    pid: 7,
    pgid: 7,
    startedAt: "2020-01-01T00:00:01.000Z",
    heartbeatAt: "2020-01-01T00:00:02.000Z",
    step: 1,
    lastMetrics: null,
    reason,
  });
const running = statusOf("running", null);

describe("slurm job states joined with the run's files", () => {
  it("reads squeue and sacct lines, skipping steps, headers and warnings", () => {
    expect(parseSqueue("41|a3r.c1+b1|PENDING|Resources\nsqueue: error: x\n")).toEqual([
      { jobId: "41", name, state: "PENDING", reason: "Resources", source: "squeue" },
    ]);
    expect(parseSacct("41|a3r.c1+b1|CANCELLED by 0|None\n41.batch|batch|CANCELLED|\n")).toEqual([
      { jobId: "41", name, state: "CANCELLED", reason: "", source: "sacct" },
    ]);
  });

  it("takes squeue's answer first, sacct's only for jobs squeue forgot, and the recorded job over another of the same name", () => {
    const squeue = parseSqueue("41|a3r.c1+b1|RUNNING|None\n");
    // sacct lags behind squeue: a new job it has no record of yet is still found.
    expect(jobOfRun(name, "41", squeue, [])?.state).toBe("RUNNING");
    expect(jobOfRun(name, "41", [], parseSacct("41|a3r.c1+b1|TIMEOUT|None\n"))?.state).toBe("TIMEOUT");
    expect(jobOfRun(name, "41", parseSqueue("40|a3r.c1+b1|FAILED|None\n41|a3r.c1+b1|RUNNING|None\n"), [])?.jobId).toBe("41");
    // No record (a leader killed after sbatch): the newest job of the name.
    expect(jobOfRun(name, undefined, parseSqueue("40|a3r.c1+b1|FAILED|None\n42|a3r.c1+b1|PENDING|Priority\n"), [])?.jobId).toBe("42");
    expect(jobOfRun(name, "41", [], [])).toBeUndefined();
  });

  it("maps Slurm's states onto the run: waiting with its reason, ended by Slurm, forgotten", () => {
    const pending = slurmProgress(ref, "hpc", { launch: launchedLongAgo }, parseSqueue("41|a3r.c1+b1|PENDING|QOSMaxGRESPerUser")[0]);
    expect([pending.state, pending.reason]).toEqual(["queued", "waiting in Slurm as job 41: PENDING (QOSMaxGRESPerUser)"]);
    const requeued = slurmProgress(ref, "hpc", { launch: launchedLongAgo, status: running }, parseSqueue("41|a3r.c1+b1|PENDING|BeginTime")[0]);
    expect(requeued.reason).toBe("requeued by Slurm as job 41, waiting: PENDING (BeginTime)");
    for (const [state, words] of [
      ["TIMEOUT", "over its Slurm time limit"],
      ["PREEMPTED", "preempted"],
      ["NODE_FAIL", "its node failed"],
    ] as const) {
      const ended = slurmProgress(ref, "hpc", { launch: launchedLongAgo, status: running }, { jobId: "41", name, state, reason: "", source: "sacct" });
      expect([ended.state, ended.finished, ended.reason]).toEqual(["lost", false, `Slurm ended job 41 as ${state}, ${words}, before its worker finished`]);
    }
    const forgotten = slurmProgress(ref, "hpc", { launch: launchedLongAgo, status: running }, undefined);
    expect(forgotten.state).toBe("lost");
    expect(forgotten.reason).toMatch(/no longer knows job 41/);
    const young = slurmProgress(ref, "hpc", { launch: launchedLongAgo.replace("2020-01-01T00:00:00.000Z", new Date().toISOString()) }, undefined);
    expect(young.state).toBe("launching");
    expect(slurmProgress(ref, "hpc", {}, undefined).state).toBe("unknown");
    // A job found by name with no launch.json yet: launching, so nobody submits it again.
    const adopted = slurmProgress(ref, "hpc", {}, parseSqueue("43|a3r.c1+b1|RUNNING|None")[0]);
    expect([adopted.state, adopted.reason]).toEqual(["launching", "submitted as Slurm job 43 (found by its name)"]);
  });

  it("keeps the worker's own end and adds what Slurm imposed", () => {
    const finished = slurmProgress(
      ref,
      "hpc",
      { launch: launchedLongAgo, status: statusOf("cancelled", "cancelled by SIGTERM"), finish: "cancelled\n" },
      { jobId: "41", name, state: "TIMEOUT", reason: "TimeLimit", source: "squeue" },
    );
    expect([finished.state, finished.finished, finished.reason]).toEqual([
      "cancelled",
      true,
      "cancelled by SIGTERM; Slurm: job 41 TIMEOUT (over its Slurm time limit)",
    ]);
    // Still being killed over its limit: squeue says COMPLETING, its reason TimeLimit.
    const completing = slurmProgress(
      ref,
      "hpc",
      { launch: launchedLongAgo, status: statusOf("cancelled", "cancelled by SIGTERM"), finish: "cancelled\n" },
      { jobId: "41", name, state: "COMPLETING", reason: "TimeLimit", source: "squeue" },
    );
    expect(completing.reason).toBe("cancelled by SIGTERM; Slurm: job 41 TIMEOUT (over its Slurm time limit)");
    const ownEnd = slurmProgress(
      ref,
      "hpc",
      { launch: launchedLongAgo, status: statusOf("succeeded", null), finish: "succeeded\n" },
      { jobId: "41", name, state: "COMPLETED", reason: "", source: "squeue" },
    );
    expect([ownEnd.state, ownEnd.reason]).toEqual(["succeeded", null]);
  });
});

describe("sinfo and the job request", () => {
  it("counts GPUs and CPUs of the partition's usable nodes, once per node", () => {
    const text = [
      "n1|gpu*|64|gpu:a100:4(S:0-1)|mix",
      "n2|gpu*|64|gpu:a100:4,gpu:v100:2|idle",
      "n3|gpu*|64|gpu:a100:4|drain*",
      "n1|all|64|gpu:a100:4(S:0-1)|mix",
      "c1|cpu|32|(null)|idle",
    ].join("\n");
    expect(parseSinfo(text, undefined)).toEqual({ partition: "gpu", nodes: 2, cpus: 128, gpus: 10 });
    expect(parseSinfo(text, "gpu", "gpu:v100").gpus).toBe(2);
    expect(parseSinfo(text, "cpu")).toEqual({ partition: "cpu", nodes: 1, cpus: 32, gpus: 0 });
    expect(gpusInGres("(null)")).toBe(0);
  });

  const host: SlurmHostConfig = {
    name: "hpc",
    kind: "slurm",
    partition: "gpu",
    account: "lab",
    gres: "gpu:a100",
    sbatch_options: ["--exclusive"],
    workdir: "/w",
    a3r: "a3r",
  };

  it("derives the time limit from the budget plus the worker's grace and room to prepare, unless the host sets one", () => {
    expect(timeLimitMinutes(host, { timeBudgetMs: 60 * 60_000, frontMatter: {} })).toBe(66);
    expect(timeLimitMinutes(host, { timeBudgetMs: 60 * 60_000, frontMatter: { worker: { grace_period: "5m" } } })).toBe(70);
    expect(timeLimitMinutes({ ...host, time_limit: "2h" }, { timeBudgetMs: 60_000, frontMatter: {} })).toBe(120);
    expect(timeLimitMinutes(host, { timeBudgetMs: Number.NaN, frontMatter: {} })).toBeUndefined();
  });

  it("asks for the host's partition, account, Gres and options, named by campaign and blueprint id", () => {
    const request = { ref, host, runDir: "/w/c1/b1", gpus: 2, timeLimitMinutes: 66 };
    expect(sbatchArguments(request)).toEqual([
      "--parsable",
      "--job-name=a3r.c1+b1",
      "--comment=a3r:c1+b1",
      "--chdir=/w/c1/b1",
      "--output=/w/c1/b1/worker.log",
      "--open-mode=append",
      "--requeue",
      "--signal=B:TERM@65",
      "--nodes=1",
      "--ntasks=1",
      "--partition=gpu",
      "--account=lab",
      "--gres=gpu:a100:2",
      "--time=66",
      "--exclusive",
    ]);
    const script = batchScript({ ...request, llmAllowance: { tokens: 10 } });
    expect(script.startsWith("#!/bin/sh\n")).toBe(true);
    expect(script).toContain("exec a3r worker run /w/c1/b1/blueprint.md --result-dir /w/c1/b1/result --llm-tokens 10");
    expect(script).not.toContain("CUDA_VISIBLE_DEVICES=;");
    expect(batchScript({ ...request, gpus: 0 })).toContain("CUDA_VISIBLE_DEVICES=; export CUDA_VISIBLE_DEVICES");
  });
});

describe("a3r hosts check of a slurm host", () => {
  const host: SlurmHostConfig = { name: "hpc", kind: "slurm", partition: "gpu", gres: "gpu", sbatch_options: [], workdir: "/w", a3r: "a3r" };
  const answer = (parts: { missing?: string; sinfo?: string; testOnly?: string; testExit?: number }) =>
    [
      "@@commands",
      parts.missing ?? "",
      "@@sinfo",
      parts.sinfo ?? "n1|gpu*|64|gpu:4|idle",
      "@@sinfo-exit 0",
      "@@testonly",
      parts.testOnly ?? "sbatch: Job 3 to start at 2026-01-01T00:00:00 using 1 processors on nodes n1 in partition gpu",
      `@@testonly-exit ${parts.testExit ?? 0}`,
      "@@a3r",
      "ok a3r 0.1.0",
      "@@gpus",
      "no nvidia-smi",
      "@@disk",
      "/dev/sda1 100 50 50000 50% /",
      "",
    ].join("\n");

  it("passes a cluster that accepts what a run asks, and names each problem otherwise", () => {
    const good = parseSlurmCheck(host, answer({}));
    expect([good.ok, good.problems, good.gpuCount]).toEqual([true, [], 4]);
    expect(good.gpus).toBe("4 (gpu) and 64 CPUs on 1 node(s) in gpu (sinfo)");
    const bad = parseSlurmCheck(
      { ...host, partition: "nope" },
      answer({ missing: "sbatch", testOnly: "sbatch: error: invalid partition specified: nope", testExit: 1 }),
    );
    expect(bad.ok).toBe(false);
    expect(bad.problems).toEqual([
      "Slurm client commands missing: sbatch (install slurm-client, or set login: to the cluster's login node)",
      'partition "nope" does not exist (sinfo lists: gpu)',
      "sbatch --test-only refused what a run asks: sbatch: error: invalid partition specified: nope",
    ]);
  });
});
