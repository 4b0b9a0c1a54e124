import { afterEach, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditResultDir, readMetrics } from "../campaign/index.ts";
import { slowTests, slowTierNote } from "../test-support/slow-tests.ts";

const run = promisify(execFile);
const cli = new URL("../bin/a3r.js", import.meta.url).pathname;

let folder: string;
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

/**
 * README's main command: the swarm demo must run from wherever the checkout is, learn
 * (reward from chance to the prediction), and leave a result directory the audit accepts.
 */
describe("a3r worker demo", () => {
  // Slow tier: worker/swarm-mode.int.test.ts covers the worker's swarm path in npm test; this
  // repeats it through `a3r worker demo` with the example blueprint's 40 steps.
  it.skipIf(!slowTests)(
    `trains the embedded policy through the worker and writes a complete, truthful result directory${slowTierNote}`,
    async () => {
      folder = await mkdtemp(join(tmpdir(), "a3r-worker-demo-"));
      const { stdout } = await run(process.execPath, [cli, "worker", "demo", "--runs-dir", folder, "--quiet", "--json"], { timeout: 240_000 });
      const outcome = JSON.parse(stdout) as { state: string; resultDir: string; attempts: number };
      expect(outcome.state).toBe("succeeded");
      expect(outcome.resultDir).toBe(join(folder, "swarm-demo"));

      const { records } = await readMetrics(join(outcome.resultDir, "metrics.jsonl"));
      expect(records.length).toBeGreaterThanOrEqual(30);
      // A step built wholly from leftovers has no new rollouts, hence no rollout mean.
      const level = records.map((record) => Number(record.rollout_reward_mean ?? Number.NaN)).filter(Number.isFinite);
      expect(level.length).toBeGreaterThanOrEqual(25);
      expect(Math.max(...level.slice(0, 3))).toBeLessThan(0.3);
      // One step's rollout mean is an estimate from a few dozen episodes, and on a loaded
      // machine the clients lag the policy: the end is judged over the last five steps, which
      // must reach the prediction's 0.8 and all stay far above chance (about 0.03).
      const end = level.slice(-5);
      expect(Math.max(...end)).toBeGreaterThanOrEqual(0.8);
      expect(Math.min(...end)).toBeGreaterThanOrEqual(0.5);

      expect(await readFile(join(outcome.resultDir, "finish.flag"), "utf8")).toContain("succeeded");
      // The blueprint predicts the last step's level; the verdict must say what that step measured.
      expect(await readFile(join(outcome.resultDir, "result.md"), "utf8")).toContain(level.at(-1)! >= 0.8 ? "**supported**" : "**refuted**");
      expect(await readFile(join(outcome.resultDir, "curves.svg"), "utf8")).toContain('<path class="series"');
      const findings = await auditResultDir(outcome.resultDir);
      expect(findings.filter((finding) => finding.severity === "error")).toEqual([]);
    },
    300_000,
  );
});
