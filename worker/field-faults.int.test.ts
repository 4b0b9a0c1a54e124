import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { auditResultDir, readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * Faults found by running real failures through `a3r worker run` (issue 24): each through a
 * real worker and a fixture trainer (trainer.mjs, py_trainer.py with Debian's python3 for
 * json.dumps' NaN), ending with a truthful, audited result directory.
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

async function ended(resultDir: string, state: string) {
  const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
  expect(status.state, status.reason ?? "").toBe(state);
  expect((await readFile(join(resultDir, "finish.flag"), "utf8")).trim()).toBe(state);
  expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  return {
    status,
    attempts: await readFile(join(resultDir, "attempts.md"), "utf8"),
    result: await readFile(join(resultDir, "result.md"), "utf8"),
    events: (await readEvents(join(resultDir, "events.jsonl"))).events,
    metrics: (await readMetrics(join(resultDir, "metrics.jsonl"))).records,
  };
}

const python = "/usr/bin/python3";
const rayOom =
  "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called.";

describe("Python's NaN in $A3R_METRICS_FILE (json.dumps)", () => {
  it.skipIf(!process.platform.startsWith("linux"))(
    "sees a NaN loss written as NaN, halves the learning rate and resumes; the worker's metrics.jsonl keeps NaN as NaN",
    async () => {
      const { path, resultDir } = await folder.write({
        id: "py-nan",
        command: `${python} py_trainer.py --steps 6 --nan-after 3 --nan-lr-above 0.0006 --inf-reward-at 2`,
        frontMatter: { overrides: { lr: 0.001 } },
      });
      const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
      const run = await ended(resultDir, "succeeded");
      expect(outcome.attempts).toBe(2);
      expect(run.events.filter((event) => event.kind === "failure.classified")).toEqual([
        expect.objectContaining({ failureClass: "nan_loss", attempt: 1, evidence: "metric loss was not finite at step 4" }),
      ]);
      expect(run.events.find((event) => event.kind === "metric.non-finite")).toMatchObject({ key: "reward_mean", step: 2, counted: false });
      expect(run.attempts).toContain("- lr: 0.001\n+ lr: 0.0005");
      const nan = run.metrics.find((record) => record.attempt === 1 && record.step === 4);
      expect(nan?.loss).toBeNaN();
      expect(run.metrics.find((record) => record.step === 2)?.reward_mean).toBe(Number.POSITIVE_INFINITY);
      expect(await readFile(join(resultDir, "metrics.jsonl"), "utf8")).toMatch(/"loss":NaN/);
      expect(await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8")).toContain("resuming from step 3");
    },
  );
});

describe("classification through a real run", () => {
  it("Ray's 'killed by SIGKILL by OOM killer due to high memory usage' is out of memory: the batch is halved, not retried as it was", async () => {
    const config = join(folder.dir, "ray-oom.json");
    await writeFile(config, JSON.stringify({ train_batch_size: 64 }));
    const { path, resultDir } = await folder.write({
      id: "ray-oom",
      command: `node fail-with.mjs --batch-above 32 --text "${rayOom}" && node trainer.mjs --steps 2`,
      config,
    });
    await runWorker({ blueprintPath: path, progress: silentProgress });
    const run = await ended(resultDir, "succeeded");
    expect(run.events.find((event) => event.kind === "failure.classified")).toMatchObject({ failureClass: "out_of_memory", attempt: 1 });
    expect(run.attempts).toContain("- train_batch_size: 64\n+ train_batch_size: 32");
  });

  it("`python3.99: not found` (exit 127) is a missing program: it fails at once with the line, no model asked", async () => {
    const { path, resultDir } = await folder.write({ id: "no-python", command: "python3.99 train.py" });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    const run = await ended(resultDir, "failed");
    expect(outcome.attempts).toBe(1);
    const classified = run.events.find((event) => event.kind === "failure.classified");
    expect(classified).toMatchObject({ failureClass: "missing_module" });
    expect(String(classified?.evidence)).toMatch(/python3\.99: not found \(exit 127\)/);
  });
});

describe("the worker's own records are guarded", () => {
  it("a run appending to metrics.jsonl, events.jsonl, attempts.md and writing result.md is undone and reported; result.md holds no forged step", async () => {
    const { path, resultDir } = await folder.write({
      id: "forged-records",
      command: "node trainer.mjs --steps 3 && node forge-records.mjs && sleep 0.5",
    });
    await runWorker({ blueprintPath: path, progress: silentProgress });
    const run = await ended(resultDir, "succeeded");
    expect(run.metrics.map((record) => record.step)).toEqual([1, 2, 3]);
    expect(run.result).not.toContain("999");
    expect(run.result).not.toContain("0.99");
    expect(run.attempts).not.toContain("succeeded brilliantly");
    const foreign = run.events.filter((event) => event.kind === "result-dir.foreign-write");
    expect(foreign.map((event) => event.file).sort()).toEqual(["attempts.md", "events.jsonl", "metrics.jsonl", "result.md"]);
    expect(foreign.find((event) => event.file === "metrics.jsonl")).toMatchObject({ action: "cut them off" });
    expect(String(foreign.find((event) => event.file === "metrics.jsonl")?.found)).toContain('"step":999');
    expect(run.events.filter((event) => event.kind === "run.finished")).toHaveLength(1);
  });
});

describe("edges of how a run ended", () => {
  it("a trainer that deletes logs/ and exits 0 leaves no exit file: its end is unknown, never a guessed SIGKILL", async () => {
    const { path, resultDir } = await folder.write({ id: "no-exit-file", command: 'node trainer.mjs --steps 2 && rm -rf "$A3R_RESULT_DIR/logs"' });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    const run = await ended(resultDir, "failed");
    const classified = run.events.filter((event) => event.kind === "failure.classified");
    expect(classified.length).toBe(outcome.attempts);
    for (const event of classified) {
      expect(event.failureClass).toBe("unknown");
      expect(JSON.stringify(event)).not.toContain("SIGKILL");
    }
    expect(run.attempts).toContain("how is unknown (no exit file and no folder for it: the run removed logs/)");
    expect(run.attempts).not.toContain("killed by SIGKILL");
  });

  it("an empty .worker-failure.json beside the run (a write the full disk cut off) is not a record: the run runs and it is removed", async () => {
    const { path, resultDir } = await folder.write({ id: "empty-failure-record", command: "node trainer.mjs --steps 2" });
    const { mkdir, access } = await import("node:fs/promises");
    await mkdir(join(folder.dir, "results"), { recursive: true });
    await writeFile(`${resultDir}.worker-failure.json`, "");
    await runWorker({ blueprintPath: path, progress: silentProgress });
    await ended(resultDir, "succeeded");
    await expect(access(`${resultDir}.worker-failure.json`)).rejects.toThrow();
  });
});

describe("the time budget is held within one grace period", () => {
  it("a trainer that ends on TERM is stopped by TERM (no grace period spent waiting on its unreaped zombies); one that ignores TERM is KILLed after one", async () => {
    const plain = await folder.write({
      id: "budget-term",
      command: "node trainer.mjs --steps 1000 --step-ms 100",
      budget: "1s",
      worker: { grace_period: "20s" },
    });
    await runWorker({ blueprintPath: plain.path, progress: silentProgress });
    const run = await ended(plain.resultDir, "timed_out");
    expect(run.events.find((event) => event.kind === "budget.hit")?.stopped).toEqual([expect.objectContaining({ role: "main", outcome: "terminated" })]);
    expect(run.attempts).toMatch(/main \(pid \d+\) terminated/);

    const stubborn = await folder.write({ id: "budget-kill", command: "node trainer.mjs --steps 1000 --step-ms 100 --children 1", budget: "1s" });
    await runWorker({ blueprintPath: stubborn.path, progress: silentProgress });
    const killed = await ended(stubborn.resultDir, "timed_out");
    expect(killed.events.find((event) => event.kind === "budget.hit")?.stopped).toEqual([expect.objectContaining({ outcome: "killed" })]);
  });
});

describe("runs that stop before their planned steps", () => {
  it("exit 0 after 3 of max_steps 20 (overrides) is failed: stopped at step 3 of 20, and the prediction is not judged on the partial curve", async () => {
    const { path, resultDir } = await folder.write({
      id: "short-overrides",
      command: "node trainer.mjs --steps 3",
      frontMatter: { overrides: { max_steps: 20 } },
    });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    expect(outcome.reason).toContain("stopped at step 3 of 20");
    const run = await ended(resultDir, "failed");
    expect(run.status.reason).toMatch(/^stopped at step 3 of 20 \(the command exited 0; 20 planned by overrides max_steps\)/);
    expect(run.result).toContain("Verdict: **inconclusive**");
    expect(run.result).toContain("not judged on its partial curve");
    expect(run.events.find((event) => event.kind === "run.stopped-short")).toMatchObject({ step: 3, planned: 20 });
  });

  it("front matter expected_steps and the config's max_steps plan the steps too; a run that reaches them succeeds", async () => {
    const short = await folder.write({ id: "short-expected", command: "node trainer.mjs --steps 2", frontMatter: { expected_steps: 5 } });
    await runWorker({ blueprintPath: short.path, progress: silentProgress });
    expect((await ended(short.resultDir, "failed")).status.reason).toContain("stopped at step 2 of 5 (the command exited 0; 5 planned by expected_steps)");
    const config = join(folder.dir, "planned.json");
    await writeFile(config, JSON.stringify({ trainer: { max_steps: 4 } }));
    const reached = await folder.write({ id: "reached-config", command: "node trainer.mjs --steps 4", config });
    await runWorker({ blueprintPath: reached.path, progress: silentProgress });
    expect((await ended(reached.resultDir, "succeeded")).result).toContain("Verdict: **supported**");
    const configShort = await folder.write({ id: "short-config", command: "node trainer.mjs --steps 3", config });
    await runWorker({ blueprintPath: configShort.path, progress: silentProgress });
    expect((await ended(configShort.resultDir, "failed")).status.reason).toContain("4 planned by config max_steps");
  });

  it("a blueprint's expected_steps that is not a whole number above 0 fails `a3r blueprint validate`", async () => {
    const { path } = await folder.write({ id: "bad-expected", command: "node trainer.mjs", frontMatter: { expected_steps: 0 } });
    const { readBlueprintFile } = await import("../blueprints/index.ts");
    await expect(readBlueprintFile(path)).rejects.toThrow(/front matter field "expected_steps" is invalid/);
  });
});

describe("a stop through a launcher ends cancelled, never a failure", () => {
  it("the local launcher's cancel waits the blueprint's grace period (and the worker's writes): the run ends cancelled with the stop as its cause", async () => {
    const { LocalLauncher } = await import("../hosts/index.ts");
    const { blueprintGraceMs, cancelWaitMs } = await import("../hosts/port/cancel-wait.ts");
    const { checkoutA3rCommand } = await import("../test-support/fixture-blueprint.ts");
    // A blueprint's 10 s grace: the launcher waits at least that before KILL (it killed at 5 s).
    expect(cancelWaitMs(blueprintGraceMs("---\na3r: blueprint/v1\nworker: { grace_period: 10s }\n---\n"))).toBeGreaterThanOrEqual(10_000 + 10_000);
    expect(cancelWaitMs(blueprintGraceMs(undefined))).toBeGreaterThanOrEqual(30_000);
    // A trainer whose child ignores TERM: the worker needs its whole grace period to stop it.
    const { path } = await folder.write({
      id: "stopped-by-launcher",
      command: "node trainer.mjs --steps 1000 --step-ms 100 --children 1",
      worker: { grace_period: "1500ms" },
    });
    const launcher = new LocalLauncher({ host: "here", workdir: join(folder.dir, "host"), a3r: checkoutA3rCommand });
    const ref = { campaign: "stops", blueprintId: "stopped-by-launcher" };
    const resultDir = join(folder.dir, "host-results", "stopped-by-launcher");
    await launcher.launch({ ...ref, blueprintFile: path, gpuIndices: [], resultDir });
    const deadline = Date.now() + 45_000;
    while ((await readMetrics(join(resultDir, "metrics.jsonl"))).records.length < 2) {
      if (Date.now() > deadline) throw new Error("no metrics in time");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await launcher.cancel(ref)).toBe(true);
    const run = await ended(resultDir, "cancelled");
    expect(run.status.reason).toContain("stopped: the worker got SIGTERM (a3r stop or the host's cancel)");
    expect(run.events.some((event) => event.kind === "run.cancelled")).toBe(true);
    expect(run.events.some((event) => event.kind === "failure.classified")).toBe(false);
  });
});

describe("a worker killed in the launch window (between starting the trainer and writing status.json)", () => {
  it("is restarted and never starts a second trainer beside the live one: at each kill point the stray is stopped and recorded, or re-attached", async () => {
    const { spawn } = await import("node:child_process");
    const { existsSync, readFileSync } = await import("node:fs");
    const { fileURLToPath } = await import("node:url");
    const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
    const config = join(folder.dir, "window.json");
    await writeFile(config, JSON.stringify({ lr: 0.001 }));
    const alive = (pid: number) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
      } catch {
        return false;
      }
    };
    // Kill points: by a file watcher (config copy written, 20 ms later, log opened, trainer
    // started), and the one a watcher cannot hit reliably, by the worker itself
    // (A3R_WORKER_CRASH_AT=after-spawn: the group started, status.json not yet written).
    const points: Array<{ name: string; file?: (dir: string, pids: string) => string; delayMs: number; crashAt?: string }> = [
      { name: "config written", file: (dir) => join(dir, "config", "attempt-1.json"), delayMs: 0 },
      { name: "20 ms after the config", file: (dir) => join(dir, "config", "attempt-1.json"), delayMs: 20 },
      { name: "log opened", file: (dir) => join(dir, "logs", "attempt-1.log"), delayMs: 0 },
      { name: "group started, status not written", delayMs: 0, crashAt: "after-spawn" },
      { name: "trainer started", file: (_dir, pids) => pids, delayMs: 0 },
    ];
    for (const [index, point] of points.entries()) {
      const pidFile = join(folder.dir, `window-${index}.pids`);
      // Every trainer holds after step 1 until the gate opens, which is once the restarted
      // worker has launched (or re-attached): a stray of the dead worker is still alive then.
      const gate = join(folder.dir, `window-${index}.gate`);
      const { path, resultDir } = await folder.write({
        id: `launch-window-${index}`,
        command: `node trainer.mjs --steps 3 --step-ms 50 --pause-after 1 --until-file ${gate} --pid-file ${pidFile}`,
        config,
        worker: { lease_ttl: "1s" },
      });
      const env = { ...process.env, ...(point.crashAt ? { A3R_WORKER_CRASH_AT: point.crashAt } : {}) };
      const first = spawn(process.execPath, [cli, "worker", "run", path, "--quiet", "--no-llm"], { stdio: "ignore", env });
      const trigger = point.file?.(resultDir, pidFile);
      await new Promise<void>((resolve, reject) => {
        if (trigger === undefined) return resolve();
        const started = Date.now();
        const timer = setInterval(() => {
          if (existsSync(trigger)) {
            clearInterval(timer);
            setTimeout(() => {
              first.kill("SIGKILL");
              resolve();
            }, point.delayMs);
          } else if (Date.now() - started > 30_000) {
            clearInterval(timer);
            reject(new Error(`${point.name}: ${trigger} never appeared`));
          }
        }, 2);
      });
      await new Promise((resolve) => first.once("exit", resolve));
      const restartedAt = Date.now();
      const opener = setInterval(async () => {
        const events = (await readEvents(join(resultDir, "events.jsonl")).catch(() => ({ events: [] }))).events;
        const started = events.some(
          (event) => (event.kind === "run.launched" || event.kind === "worker.reattached") && Date.parse(event.time) >= restartedAt - 5,
        );
        if (started) await writeFile(gate, "open\n");
      }, 20);
      const outcome = await runWorker({ blueprintPath: path, progress: silentProgress }).finally(() => clearInterval(opener));
      expect(outcome.state, `${point.name}: ${outcome.reason}`).toBe("succeeded");
      const run = await ended(resultDir, "succeeded");
      expect(run.status.attempt, point.name).toBe(1);
      const pids = existsSync(pidFile) ? readFileSync(pidFile, "utf8").trim().split("\n").filter(Boolean).map(Number) : [];
      for (const pid of pids) expect(alive(pid), `${point.name}: pid ${pid}`).toBe(false);
      if (point.crashAt) {
        // Deterministic: the dead worker's group was alive and in no record; it was stopped and recorded before the launch.
        expect(
          run.events.find((event) => event.kind === "run.strays-stopped"),
          point.name,
        ).toBeDefined();
        expect(
          run.events.some((event) => event.kind === "worker.reattached"),
          point.name,
        ).toBe(false);
      }
      if (pids.length > 1) {
        // Two trainers were started: the first (the dead worker's) was stopped before the second launched.
        const stopped = run.events.find((event) => event.kind === "run.strays-stopped");
        expect(stopped, point.name).toBeDefined();
        expect(
          (stopped!.processes as Array<{ pid: number }>).map((process) => process.pid),
          point.name,
        ).toContain(pids[0]);
        const launches = run.events.filter((event) => event.kind === "run.launched");
        expect(Date.parse(stopped!.time) <= Date.parse(launches[launches.length - 1]!.time), point.name).toBe(true);
      } else if (pids.length === 1 && !run.events.some((event) => event.kind === "worker.reattached")) {
        // One trainer: the dead worker's was stopped before it wrote its pid, or it was the only one launched.
        expect(run.events.filter((event) => event.kind === "run.launched").length, point.name).toBeGreaterThanOrEqual(1);
      }
    }
  }, 120_000);
});
