import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { access, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * The worker's own writes fail mid-run: the result directory becomes
 * read-only (EROFS) or its disk fills up (ENOSPC). The worker must stop the training (it
 * never runs unwatched), say so on stderr with exit code 1, leave the truth next to the run
 * folder, and a worker started later must finish the run as failed with that reason, not
 * guess "killed by SIGKILL" from the missing exit file.
 *
 * Root is not stopped by chmod, so as root the faults are real mounts in a private mount
 * namespace of the worker (`unshare -m`): a read-only bind mount stacked on the folder, or
 * a tiny tmpfs filled up. Without root, the folder is made unwritable with chmod.
 */
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
const isRoot = process.getuid?.() === 0;
const privateMounts = isRoot && spawnSync("unshare", ["-m", "--propagation", "private", "true"]).status === 0;

let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
const trainers: number[] = [];
afterAll(async () => {
  // A failing case must not leave its trainer running (only the pids this file started).
  for (const pid of trainers) if (alive(pid)) process.kill(pid, "SIGKILL");
  await folder.cleanup();
});

const quote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

function startWorker(blueprint: string, setup: string): { pid: number; done: Promise<{ code: number | null; stderr: string; stdout: string }> } {
  const worker = [process.execPath, cli, "worker", "run", blueprint, "--no-llm", "--quiet", "--json"].map(quote).join(" ");
  const child = privateMounts
    ? spawn("unshare", ["-m", "--propagation", "private", "sh", "-c", `${setup}exec ${worker}`], { stdio: ["ignore", "pipe", "pipe"] })
    : spawn("sh", ["-c", `exec ${worker}`], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  const done = new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) =>
    child.once("close", (code) => resolve({ code, stderr, stdout })),
  );
  return { pid: child.pid!, done };
}

/** Runs a command inside the worker's mount namespace (root), or here (chmod). */
function inWorkerNamespace(pid: number, command: string): void {
  const result = privateMounts ? spawnSync("nsenter", ["-t", String(pid), "-m", "sh", "-c", command]) : spawnSync("sh", ["-c", command]);
  if (result.status !== 0 && !command.includes("|| true")) throw new Error(`fault injection failed: ${command}: ${result.stderr}`);
}

/** Running: a zombie (ended, not yet reaped by whoever inherited it) is not. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function runUntilFault(id: string, setup: (dir: string) => string, fault: (dir: string) => string) {
  const pidFile = join(folder.dir, `${id}.pids`);
  const { path, resultDir } = await folder.write({
    id,
    command: `node trainer.mjs --steps 1000 --step-ms 100 --pid-file ${pidFile}`,
    worker: { stall_timeout: "1m" },
  });
  await mkdir(resultDir, { recursive: true });
  const worker = startWorker(path, setup(resultDir));
  // A tmpfs mounted in the worker's namespace is seen only from inside it.
  const steps = async () =>
    privateMounts
      ? spawnSync("nsenter", ["-t", String(worker.pid), "-m", "cat", join(resultDir, "metrics.jsonl")], { encoding: "utf8" })
          .stdout.split("\n")
          .filter(Boolean).length
      : (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length;
  await until(async () => (await steps()) >= 3);

  inWorkerNamespace(worker.pid, fault(resultDir));
  const ended = await worker.done;
  const trainer = Number((await readFile(pidFile, "utf8")).trim().split("\n")[0]);
  trainers.push(trainer);
  return { path, resultDir, ended, trainer };
}

async function expectFinishedFromRecord(path: string, resultDir: string, code: string) {
  const record = JSON.parse(await readFile(`${resultDir}.worker-failure.json`, "utf8"));
  expect(record).toMatchObject({ state: "failed", error: { code } });
  expect(record.reason).toContain(`${code} (`);
  // The next worker, once the folder can be written again, finishes the run from the record.
  const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
  expect(outcome.state).toBe("failed");
  expect(outcome.reason).toBe(record.reason);
  const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
  expect(status.state).toBe("failed");
  expect(status.reason).toContain(`could not write its result directory (${code}`);
  expect(status.reason).not.toContain("SIGKILL");
  expect((await readFile(join(resultDir, "finish.flag"), "utf8")).trim()).toBe("failed");
  expect((await readEvents(join(resultDir, "events.jsonl"))).events.find((event) => event.kind === "worker.storage-failure")).toMatchObject({
    error: { code },
  });
  expect(await readFile(join(resultDir, "attempts.md"), "utf8")).toContain("stopped by the worker: it could not write the result directory");
  expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  await expect(access(`${resultDir}.worker-failure.json`)).rejects.toThrow();
}

describe.skipIf(isRoot && !privateMounts)("worker: its result directory fails mid-run", () => {
  it("read-only (EROFS, or EACCES without root): stops the group, records the end next to the run, the next worker finishes it", async () => {
    const code = privateMounts ? "EROFS" : "EACCES";
    const run = await runUntilFault(
      "read-only",
      () => "",
      (dir) => (privateMounts ? `mount --bind -o ro ${quote(dir)} ${quote(dir)}` : `chmod -R a-w ${quote(dir)}`),
    );
    expect(run.ended.code).toBe(1);
    expect(run.ended.stderr).toContain("[RESULT_DIR_UNWRITABLE]");
    expect(run.ended.stderr).toContain(code);
    // --json: stdout carries the error as JSON too.
    expect(JSON.parse(run.ended.stdout.trim().split("\n").pop()!)).toMatchObject({ error: { code: "RESULT_DIR_UNWRITABLE", details: { code } } });
    expect(alive(run.trainer)).toBe(false);
    // The folder itself could not take the truth: it still says running.
    if (!privateMounts) spawnSync("chmod", ["-R", "u+w", run.resultDir]);
    expect((await readRunStatus(join(run.resultDir, "status.json"))).status?.state).toBe("running");
    await expectFinishedFromRecord(run.path, run.resultDir, code);
  });

  it.skipIf(!privateMounts)("disk full (ENOSPC on a tiny tmpfs): the same, and the folder that vanished with its mount is rebuilt as failed", async () => {
    const run = await runUntilFault(
      "disk-full",
      (dir) => `mount -t tmpfs -o size=8m tmpfs ${quote(dir)} && `,
      (dir) => `cat /dev/zero > ${quote(join(dir, "filler"))} 2>/dev/null || true`,
    );
    expect(run.ended.code).toBe(1);
    expect(run.ended.stderr).toContain("ENOSPC");
    expect(alive(run.trainer)).toBe(false);
    await expectFinishedFromRecord(run.path, run.resultDir, "ENOSPC");
  });
});
