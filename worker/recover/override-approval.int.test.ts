import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonlLedger, readEvents, readRunStatus } from "../../campaign/index.ts";
import { createScriptedChatModel } from "../../llm/index.ts";
import { freePort } from "../../test-support/free-port.ts";
import { fixtureFolder } from "../__fixtures__/fixture-blueprint.ts";
import { runWorker } from "../run-worker.ts";
import { silentProgress } from "../supervise/progress-reporter.ts";
import { answerApproval } from "./approval-gate.ts";

/**
 * Overrides a model proposes that rewrite the command line (here `{port}`) wait for a person
 * like a new command; overrides of config values alone stay automatic (issue 23, build 1).
 * The first attempt fails with an error no rule knows, so the scripted model is asked.
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  folder = await fixtureFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

const failFirst = `node -e "if (process.env.A3R_ATTEMPT === '1') { console.error('mysterious failure'); process.exit(3) }"`;

async function until<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("a diagnosis's overrides", () => {
  it("that rewrite the command line wait in awaiting_approval with the rewritten line; approved, they run", async () => {
    const [before, after] = [await freePort(), await freePort()];
    const { path, resultDir } = await folder.write({
      id: "port-override",
      command: `${failFirst} && node trainer.mjs --steps 2 --port {port}`,
      frontMatter: { overrides: { port: before }, first_signal_timeout: "60s" },
      budget: "2m",
    });
    const model = createScriptedChatModel([{ parsed: { diagnosis: "The port is wrong.", retry: true, overrides: { port: after } } }], {
      sink: new JsonlLedger(join(resultDir, "ledger.jsonl")),
    });
    const running = runWorker({ blueprintPath: path, progress: silentProgress, model });
    const status = (await until("awaiting_approval", async () => {
      const read = (await readRunStatus(join(resultDir, "status.json"))).status;
      return read?.state === "awaiting_approval" ? read : undefined;
    })) as Record<string, unknown>;
    expect(status.reason).toContain("the model's overrides rewrite the command line");
    expect(status.approval).toMatchObject({ overrides: { port: after }, unapprovedLines: [expect.stringContaining(`--port ${after}`)] });
    const attemptsWaiting = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attemptsWaiting).toContain("The diagnosis proposes overrides that change the command");
    expect((await readEvents(join(resultDir, "events.jsonl"))).events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    await answerApproval({ resultDir, by: "tester" });
    expect(await running).toMatchObject({ state: "succeeded", attempts: 2 });
    expect(await readFile(join(resultDir, "logs", "attempt-2.log"), "utf8")).toContain(`listening on port ${after}`);
    expect(await readFile(join(resultDir, "attempts.md"), "utf8")).toContain("The overrides that rewrite the command line were approved by tester.");
  });

  it("refused, the run fails with the person's reason and nothing else runs", async () => {
    const [before, after] = [await freePort(), await freePort()];
    const { path, resultDir } = await folder.write({
      id: "port-override-refused",
      command: `${failFirst} && node trainer.mjs --steps 2 --port {port}`,
      frontMatter: { overrides: { port: before }, first_signal_timeout: "60s" },
      budget: "2m",
    });
    const model = createScriptedChatModel([{ parsed: { diagnosis: "The port is wrong.", retry: true, overrides: { port: after } } }], {
      sink: new JsonlLedger(join(resultDir, "ledger.jsonl")),
    });
    const running = runWorker({ blueprintPath: path, progress: silentProgress, model });
    await until("awaiting_approval", async () =>
      (await readRunStatus(join(resultDir, "status.json"))).status?.state === "awaiting_approval" ? true : undefined,
    );
    await answerApproval({ resultDir, by: "tester", refuse: true, note: "keep the port" });
    const outcome = await running;
    expect(outcome.state).toBe("failed");
    expect(outcome.reason).toContain("tester refused the overrides the model proposed (keep the port)");
    expect((await readEvents(join(resultDir, "events.jsonl"))).events.filter((event) => event.kind === "run.launched")).toHaveLength(1);
  });

  it("of config values alone stay automatic", async () => {
    const { path, resultDir } = await folder.write({
      id: "lr-override",
      command: `${failFirst} && node trainer.mjs --steps 2`,
      frontMatter: { overrides: { lr: 0.1 }, first_signal_timeout: "60s" },
      budget: "2m",
    });
    const model = createScriptedChatModel([{ parsed: { diagnosis: "Lower the rate.", retry: true, overrides: { lr: 0.05 } } }], {
      sink: new JsonlLedger(join(resultDir, "ledger.jsonl")),
    });
    expect(await runWorker({ blueprintPath: path, progress: silentProgress, model })).toMatchObject({ state: "succeeded", attempts: 2 });
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.some((event) => event.kind === "approval.requested")).toBe(false);
    expect(events.find((event) => event.kind === "recovery.decided")).toMatchObject({ changed: [expect.objectContaining({ key: "lr" })] });
  });
});
