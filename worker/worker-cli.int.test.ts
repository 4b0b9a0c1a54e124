import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile, spawn } from "node:child_process";
import { access, readFile, writeFile } from "node:fs/promises";
import { auditResultDir, readMetrics, readRunStatus } from "../campaign/index.ts";
import { isGroupAlive } from "../core/process-group.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/** `a3r worker run` through the real CLI: the plan without side effects, and the exit codes. */
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { env: { ...process.env, A3R_LLM_PROVIDER: "" } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("a3r worker run (CLI)", () => {
  it("--dry-run prints the plan and changes nothing", async () => {
    const { path, resultDir } = await folder.write({
      id: "dry",
      command: "node trainer.mjs --steps 3 --port {port}",
      frontMatter: { overrides: { port: 9555 } },
    });
    const result = await run(["worker", "run", path, "--dry-run", "--gpus", "0,1"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("State: new: the worker would prepare and launch attempt 1.");
    expect(result.stdout).toContain("node trainer.mjs --steps 3 --port 9555");
    expect(result.stdout).toContain("CUDA_VISIBLE_DEVICES=0,1");
    expect(result.stdout).toContain("first-signal timeout 3s");
    await expect(access(resultDir)).rejects.toThrow();
    // An interpreter given as a program name is looked up on PATH, as the worker's preparation does.
    const onPath = join(folder.dir, "on-path.md");
    await writeFile(onPath, (await readFile(path, "utf8")).replace(`\`${process.execPath}\``, "`node`"));
    const named = await run(["worker", "run", onPath, "--dry-run"]);
    expect(named.stdout).toMatch(/ok +interpreter node\n/);
  });

  it("exits 1 with one clear line for a broken blueprint, 2 for a usage error", async () => {
    const broken = join(folder.dir, "broken.md");
    await writeFile(broken, "# not a blueprint\n");
    const result = await run(["worker", "run", broken]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error \[BLUEPRINT_INVALID\]/);
    expect(result.stderr).not.toContain("    at ");
    expect((await run(["worker", "run"])).code).toBe(2);
  });

  it("runs a failing blueprint to a failed result directory and exits 1", async () => {
    const { path } = await folder.write({ id: "cli-fails", command: "node no-such-file.mjs" });
    const result = await run(["worker", "run", path, "--quiet"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("cli-fails: failed (missing module");
  });

  it("SIGTERM to the worker cancels the run: its group is stopped and the result directory is complete", async () => {
    const { path, resultDir } = await folder.write({ id: "cli-cancel", command: "node trainer.mjs --steps 1000 --step-ms 100 --children 1" });
    const child = spawn(process.execPath, [cli, "worker", "run", path, "--json"], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout!.on("data", (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const deadline = Date.now() + 45_000;
    while ((await readMetrics(join(resultDir, "metrics.jsonl"))).records.length < 2) {
      if (Date.now() > deadline) throw new Error("no metrics in time");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill("SIGTERM");
    expect(await exited).toBe(1);
    expect(JSON.parse(stdout.trim())).toMatchObject({ state: "cancelled" });
    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(status.state).toBe("cancelled");
    expect(status.reason).toContain("cancelled (stopped: the worker got SIGTERM (a3r stop or the host's cancel))");
    expect(isGroupAlive(status.pgid!)).toBe(false);
    expect((await readFile(join(resultDir, "finish.flag"), "utf8")).trim()).toBe("cancelled");
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  });
});
