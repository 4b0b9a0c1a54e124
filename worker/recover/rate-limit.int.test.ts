import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents, readRunStatus } from "../../campaign/index.ts";
import { runWorker } from "../run-worker.ts";
import { silentProgress } from "../supervise/progress-reporter.ts";
import { fixtureFolder } from "../__fixtures__/fixture-blueprint.ts";

/**
 * A rate limit that does not lift: the worker backs off within the budget it has left (a
 * wait is at most half of it), then gives up with the reason; the run is `failed`, not
 * `timed_out` with budget left. A real trainer process that answers 429 on every attempt,
 * each after a second: long enough that the budget, not the count of recoveries of a class
 * (3), ends the retries, however fast this machine starts a process.
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

describe("a persistent 429", () => {
  it("shortens the back-off to fit the budget, then gives up with a give-up entry", async () => {
    const { path, resultDir } = await folder.write({
      id: "persistent-429",
      command: "node trainer.mjs --steps 2 --rate-limited-attempts 99 --rate-limit-after-ms 1000",
      budget: "10s",
      worker: { api_backoff: ["1m"] },
    });
    const outcome = await runWorker({ blueprintPath: path, progress: silentProgress });
    expect(outcome.state).toBe("failed");
    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(status.reason).toMatch(
      /external api rate limit: .*429.* \(gave up after \d back-offs: the \d+(\.\d)?s left of the budget leave no room for another wait and retry\)/,
    );
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    const decided = events.filter((event) => event.kind === "recovery.decided");
    expect(decided.length).toBeGreaterThanOrEqual(1);
    for (const event of decided) expect(event.delayMs as number).toBeLessThan(5_000);
    expect(events.find((event) => event.kind === "recovery.gave-up")).toBeDefined();
    expect(events.find((event) => event.kind === "budget.hit")).toBeUndefined();
    expect(await readFile(join(resultDir, "attempts.md"), "utf8")).toContain("to fit the budget");
  });
});
