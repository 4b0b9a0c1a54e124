import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditResultDir, readEvents, readRunStatus } from "../../campaign/index.ts";
import { FakeProviderServer } from "../../test-support/llm-servers/fake-provider-server.ts";
import { wireAnswer } from "../../test-support/provider-wire-answers.ts";
import { a3rEntry, runA3r, withoutModelSettings } from "../../test-support/run-cli.ts";
import { fixtureFolder } from "../__fixtures__/fixture-blueprint.ts";
import { answerApproval } from "./approval-gate.ts";

/**
 * A command a language model proposes runs only when the blueprint had it, the campaign's
 * `commands.allow` covers it, or a person approves it. Real `a3r worker run` processes
 * ask an OpenAI-compatible model over HTTP (a local stand-in server), wait visibly in
 * `awaiting_approval`, and go on when `a3r worker approve` answers (commands.allow, the
 * other way through, is covered in process by diagnose.int.test.ts).
 */
let folder: Awaited<ReturnType<typeof fixtureFolder>>;
let server: FakeProviderServer;
beforeAll(async () => {
  folder = await fixtureFolder();
  server = await FakeProviderServer.start();
});
afterAll(async () => {
  await server.close();
  await folder.cleanup();
});

const proposal = { diagnosis: "The --unknown-error flag makes the trainer fail on purpose.", retry: true, command: "node trainer.mjs --steps 3" };

function startWorker(blueprint: string): { exit: Promise<{ code: number | null; stderr: string }>; kill(): void } {
  const child = spawn(process.execPath, [a3rEntry, "worker", "run", blueprint], {
    env: {
      ...withoutModelSettings(process.env),
      NO_COLOR: "1",
      A3R_LLM_PROVIDER: "openai",
      OPENAI_API_KEY: "sk-test-approval-0000000000000000",
      A3R_LLM_BASE_URL: `${server.url}/v1`,
      A3R_LLM_MODEL: "gpt-4.1",
      A3R_LLM_MAX_RETRIES: "0",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { exit: new Promise((resolve) => child.on("exit", (code) => resolve({ code, stderr }))), kill: () => child.kill("SIGKILL") };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs = 15_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const awaiting = (resultDir: string) => () =>
  readRunStatus(join(resultDir, "status.json")).then((read) => (read.status?.state === "awaiting_approval" ? read.status : undefined));

describe("a command proposed by the model", () => {
  it("waits in awaiting_approval with the proposal, and runs once a person approves it", async () => {
    server.play([wireAnswer("openai", "diagnosis", proposal, { inputTokens: 900, outputTokens: 40 })]);
    const { path, resultDir } = await folder.write({ id: "approve", command: "node trainer.mjs --steps 3 --unknown-error", budget: "2m" });
    const worker = startWorker(path);
    const status = (await until("awaiting_approval", awaiting(resultDir))) as Record<string, unknown>;
    expect(status.reason).toContain("awaiting approval: the model's fix is a command the blueprint does not contain");
    expect(status.approval).toMatchObject({ command: "node trainer.mjs --steps 3", unapprovedLines: ["node trainer.mjs --steps 3"], attempt: 1 });
    expect(await readFile(join(resultDir, "attempts.md"), "utf8")).toContain(`Approve with \`a3r worker approve ${resultDir}\``);
    // Nothing ran meanwhile: one launch, no second attempt.
    const before = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(before.filter((event) => event.kind === "run.launched")).toHaveLength(1);
    expect(before.find((event) => event.kind === "approval.requested")).toBeDefined();

    const approved = await runA3r(["worker", "approve", resultDir, "--by", "tester"]);
    expect(approved.stderr).toBe("");
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain("approved for attempt 2");

    const exit = await worker.exit;
    expect(exit.code, exit.stderr).toBe(0);
    const final = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(final).toMatchObject({ state: "succeeded", attempt: 2 });
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.find((event) => event.kind === "approval.granted")).toMatchObject({ by: "tester" });
    const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attempts).toContain("- command: node trainer.mjs --steps 3 --unknown-error\n+ command: node trainer.mjs --steps 3");
    expect(attempts).toContain("The proposed command was approved by tester.");
    // approval.json is part of a complete result directory, not a stray file.
    expect((await auditResultDir(resultDir)).filter((finding) => finding.severity === "error")).toEqual([]);
  });

  it("fails with the person's reason when refused; an approve for a run that is not waiting is refused", async () => {
    server.play([wireAnswer("openai", "diagnosis", proposal, { inputTokens: 900, outputTokens: 40 })]);
    const { path, resultDir } = await folder.write({ id: "refuse", command: "node trainer.mjs --steps 3 --unknown-error", budget: "2m" });
    const worker = startWorker(path);
    await until("awaiting_approval", awaiting(resultDir));
    // An answer naming another command approves nothing (the CLI's --command guard, in process to keep this fast).
    await expect(answerApproval({ resultDir, by: "tester", expectCommand: "rm -rf /tmp/x" })).rejects.toThrow(
      "--command does not match the command awaiting approval",
    );
    // The same answer `a3r worker approve --refuse --note ...` writes (the CLI is run in the other cases).
    await answerApproval({ resultDir, by: "tester", refuse: true, note: "not on this cluster" });
    expect((await worker.exit).code).toBe(1);
    const final = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(final.state).toBe("failed");
    expect(final.reason).toContain("tester refused the command the model proposed (not on this cluster)");
    expect((await readEvents(join(resultDir, "events.jsonl"))).events.filter((event) => event.kind === "run.launched")).toHaveLength(1);

    await expect(answerApproval({ resultDir, by: "tester" })).rejects.toThrow(`run ${resultDir} is not awaiting approval (state failed)`);
  });

  it("a worker killed while the run awaits approval is replaced by one that waits on and applies the answer", async () => {
    server.play([wireAnswer("openai", "diagnosis", proposal, { inputTokens: 900, outputTokens: 40 })]);
    const { path, resultDir } = await folder.write({
      id: "restart",
      command: "node trainer.mjs --steps 3 --unknown-error",
      budget: "2m",
      // The second worker waits out the first one's lease: keep it short.
      worker: { lease_ttl: "1s", heartbeat_interval: "250ms" },
    });
    const first = startWorker(path);
    await until("awaiting_approval", awaiting(resultDir));
    first.kill();
    expect((await first.exit).code).toBeNull();
    // commands.allow is the other way through; here the model is not asked again: the proposal is in status.json.
    const second = startWorker(path);
    const approved = await runA3r(["worker", "approve", resultDir, "--by", "tester"]);
    expect(approved.code, approved.stderr).toBe(0);
    const exit = await second.exit;
    expect(exit.code, exit.stderr).toBe(0);
    expect((await readRunStatus(join(resultDir, "status.json"))).status).toMatchObject({ state: "succeeded", attempt: 2 });
    const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attempts).toContain("proposed command approved by tester; recovering with ask llm");
    expect(attempts).toContain("+ command: node trainer.mjs --steps 3");
    expect(server.requests).toHaveLength(1);
  });
});
