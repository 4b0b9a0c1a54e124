import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents, readRunStatus } from "../../campaign/index.ts";
import { fixtureFolder } from "../__fixtures__/fixture-blueprint.ts";
import { runWorker } from "../run-worker.ts";
import { silentProgress } from "../supervise/progress-reporter.ts";

/**
 * A placeholder's value is typed before it reaches a command line: a blueprint whose
 * `port` override is shell text fails at preparation with the reason, and no process
 * starts (a later attempt's plan is judged the same way before its launch).
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

describe("typed placeholder values", () => {
  it("fails a run whose port is not a port number before anything runs", async () => {
    const planted = join(folder.dir, "planted");
    const { path, resultDir } = await folder.write({
      id: "port-is-text",
      command: "node trainer.mjs --steps 2 --port {port}",
      frontMatter: { overrides: { port: `1; touch ${planted}` } },
    });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    expect(outcome.state).toBe("failed");
    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(status.reason).toMatch(/override port=.* is not a port number/);
    expect(status.reason).toMatch(/^preparation failed: /);
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.filter((event) => event.kind === "run.launched")).toHaveLength(0);
    expect(events.find((event) => event.kind === "run.prepare-failed")).toBeDefined();
    await expect(readFile(planted)).rejects.toThrow(/ENOENT/);
  });
});
