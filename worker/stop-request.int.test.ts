import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { auditResultDir, readEvents, readMetrics, readRunStatus, writeStopRequest } from "../campaign/index.ts";
import { isGroupAlive } from "../core/process-group.ts";
import { fixtureFolder } from "./__fixtures__/fixture-blueprint.ts";

/**
 * A stop request (`stop-request.json`, written by someone else) ends a live run through its
 * real worker (`a3r worker run`, a process): the groups are stopped, the evidence is an
 * event, and the run finishes `stopped_early` with a complete result directory.
 */
const cli = fileURLToPath(new URL("../bin/a3r.js", import.meta.url));
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("a stop request to a running worker", () => {
  it("ignores a broken request (reported once), then stops the run as stopped_early with the evidence", async () => {
    // Grandchildren that ignore SIGTERM: the stop must go through TERM, grace and KILL.
    const { path, resultDir } = await folder.write({ id: "stop-early", command: "node trainer.mjs --steps 1000 --step-ms 100 --children 1" });
    const child = spawn(process.execPath, [cli, "worker", "run", path, "--json"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, A3R_LLM_PROVIDER: "" },
    });
    let stdout = "";
    child.stdout!.on("data", (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const steps = async () => (await readMetrics(join(resultDir, "metrics.jsonl"))).records.length;
    await until("the first steps", async () => (await steps()) >= 2);

    await writeFile(join(resultDir, "stop-request.json"), '{"state": "done"}');
    const events = async () => (await readEvents(join(resultDir, "events.jsonl"))).events;
    await until("the broken request to be reported", async () => (await events()).some((event) => event.kind === "run.stop-request-invalid"));
    const before = await steps();
    await until("the run to go on past the broken request", async () => (await steps()) > before + 1);
    expect((await readRunStatus(join(resultDir, "status.json"))).status!.state).toBe("running");

    const evidence = { rung: 1, rungStep: 5, step: 7, score: 0.12, best: 0.72, bestConfiguration: "lr-0.03", rule: "keep the top 1 of 2" };
    await writeStopRequest(resultDir, { state: "stopped_early", reason: "rung 1: 0.12 is 0.6 worse than the best, lr-0.03's 0.72", evidence });
    expect(await exited).toBe(1);
    expect(JSON.parse(stdout.trim())).toMatchObject({ state: "stopped_early" });

    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(status.state).toBe("stopped_early");
    expect(status.reason).toContain("stopped early at step");
    expect(status.reason).toContain("lr-0.03's 0.72");
    expect(isGroupAlive(status.pgid!)).toBe(false);
    expect((await readFile(join(resultDir, "finish.flag"), "utf8")).trim()).toBe("stopped_early");
    const all = await events();
    expect(all.filter((event) => event.kind === "run.stop-request-invalid")).toHaveLength(1);
    const requested = all.find((event) => event.kind === "run.stop-requested")!;
    expect(requested).toMatchObject({ state: "stopped_early", evidence });
    expect(all.find((event) => event.kind === "run.finished")).toMatchObject({ state: "stopped_early" });
    const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attempts).toContain("stopped early on request");
    expect(attempts).toContain("- bestConfiguration: lr-0.03");
    expect(await readFile(join(resultDir, "result.md"), "utf8")).toContain("**stopped_early**");
    // Partial results stay: the steps made before the stop are recorded.
    expect(await steps()).toBeGreaterThan(before + 1);
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  });
});
