import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents, readMetrics, readRunStatus } from "../../campaign/index.ts";
import { runWorker } from "../run-worker.ts";
import { silentProgress } from "../supervise/progress-reporter.ts";
import { fixtureFolder } from "../__fixtures__/fixture-blueprint.ts";

/**
 * A NaN in the loss stops the run and resumes it from the last checkpoint taken before the
 * divergence (the one written at the NaN step is set aside); a NaN in any other metric is
 * a warning and the run goes on. A real trainer process (`__fixtures__/divergent-trainer.mjs`).
 */
const codebase = fileURLToPath(new URL("./__fixtures__", import.meta.url)).replace(/\/$/, "");
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

describe("NaN recovery", () => {
  it("warns about a NaN grad norm, and resumes a NaN loss from the checkpoint before the divergence with half the learning rate", async () => {
    const { path, resultDir } = await folder.write({
      id: "diverge",
      codebase,
      command: "node divergent-trainer.mjs --steps 6 --grad-nan-at 2 --nan-after 3 --nan-lr-above 0.0006 --step-ms 150",
      frontMatter: { overrides: { lr: 0.001 } },
    });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    expect(outcome.state, outcome.reason ?? "").toBe("succeeded");
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.find((event) => event.kind === "metric.non-finite")).toMatchObject({ key: "grad_norm", step: 2, counted: false });
    expect(events.filter((event) => event.kind === "failure.classified")).toEqual([
      expect.objectContaining({ failureClass: "nan_loss", attempt: 1, evidence: "metric loss was not finite at step 4" }),
    ]);
    const setAside = events.find((event) => event.kind === "checkpoint.set-aside")!;
    expect(setAside).toMatchObject({ fromStep: 4, resumeStep: 3 });
    expect(setAside.moved).toContain("step-4.json");
    expect(await readdir(join(resultDir, "checkpoints-diverged", "attempt-1"))).toContain("step-4.json");
    expect(await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8")).toContain("resuming from step 3");
    const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attempts).toContain("the next attempt resumes from step 3");
    expect(attempts).toContain("- lr: 0.001\n+ lr: 0.0005");
    expect((await readMetrics(join(resultDir, "metrics.jsonl"))).records.filter((record) => record.attempt === 2).map((record) => record.step)).toEqual([
      4, 5, 6,
    ]);
    expect((await readRunStatus(join(resultDir, "status.json"))).status).toMatchObject({ attempt: 2 });
  });
});
