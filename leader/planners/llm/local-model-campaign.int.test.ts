import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents, readLedger, type CampaignEvent } from "../../../campaign/index.ts";
import { writeFastTopic } from "../../../test-support/fast-topic.ts";
import {
  buildReferenceModel,
  referenceModelMissing,
  startReferenceModelServer,
  type ReferenceModel,
  type ReferenceModelServer,
} from "../../../test-support/llm-servers/reference-model-server.ts";
import { runA3r, type CliResult } from "../../../test-support/run-cli.ts";
import { slowTests, slowTierNote } from "../../../test-support/slow-tests.ts";

/**
 * The llm planner against a real OpenAI-compatible server on this machine: a3r's reference
 * server serving a random-weight model (a tiny Qwen2 with Qwen's real tokenizer where the
 * venv has transformers, else the tiny word-tokenizer model), through `a3r research` as a
 * person runs it. Three ways a local model fails a campaign's decision, each under
 * `--planner auto` (the heuristic makes the step, recorded) and `--planner llm` (one line
 * naming the knob, exit 1, then `a3r resume` from the same step once it is changed):
 * (a) a context window smaller than the first prompt, (b) a deadline shorter than one
 * answer, (c) nonsense answers. The ledger counts every call, unpriced, in tokens and time.
 */
const missing = referenceModelMissing();
const run = slowTests && missing === undefined ? describe : describe.skip;

let root: string;
let model: ReferenceModel;
let small: ReferenceModelServer;
let roomy: ReferenceModelServer;
/** (b)'s own server: the answers its client gave up on keep it busy, so it is closed after (b). */
let slow: ReferenceModelServer;
let counter = 0;

interface Scenario {
  dir: string;
  runsDir: string;
  campaignId: string;
  campaign: string;
  topicFile: string;
  env: NodeJS.ProcessEnv;
}

async function scenario(server: ReferenceModelServer, env: Record<string, string>): Promise<Scenario> {
  counter += 1;
  const dir = join(root, `s${counter}`);
  await mkdir(dir, { recursive: true });
  const topicFile = await writeFastTopic({ dir, seeds: 1, stages: 2, experiments: 4 });
  const runsDir = join(dir, "runs");
  const campaignId = `local-${counter}`;
  return {
    dir,
    runsDir,
    campaignId,
    campaign: join(runsDir, campaignId),
    topicFile,
    env: { A3R_LLM_PROVIDER: "openai", A3R_LLM_BASE_URL: server.baseUrl, A3R_LLM_MODEL: server.model, A3R_LLM_MAX_RETRIES: "0", ...env },
  };
}

function research(s: Scenario, planner: "auto" | "llm"): Promise<CliResult> {
  return runA3r(["research", s.topicFile, "--planner", planner, "--runs-dir", s.runsDir, "--campaign", s.campaignId], { env: s.env, timeoutMs: 600_000 });
}

function resume(s: Scenario, env: Record<string, string> = {}): Promise<CliResult> {
  return runA3r(["resume", s.campaignId, "--runs-dir", s.runsDir], { env: { ...s.env, ...env }, timeoutMs: 600_000 });
}

/** What a person does after the one-line error: lets the heuristic make the steps the model cannot. */
async function allowFallback(s: Scenario): Promise<void> {
  const file = join(s.campaign, "topic.md");
  await writeFile(file, (await readFile(file, "utf8")).replace(/^---\n/, "---\nplanner_fallback: heuristic\n"));
}

async function eventsOf(s: Scenario): Promise<CampaignEvent[]> {
  return (await readEvents(join(s.campaign, "events.jsonl"))).events;
}

async function llmCalls(s: Scenario): Promise<{ role: string; ok: boolean; errorCode?: string; durationMs: number; inputTokens: number; costUsd: number }[]> {
  return (await readLedger(join(s.campaign, "ledger.jsonl"))).entries.filter((entry) => (entry as { kind?: string }).kind === "llm") as never;
}

const fellBack = (events: CampaignEvent[]) => events.filter((event) => event.kind === "planner.fell_back");

/** One error line and its hint; never a stack trace. */
function expectOneLineError(result: CliResult, code: string, knob: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  const lines = result.stderr.trimEnd().split("\n");
  const at = lines.findIndex((line) => line.startsWith("error ["));
  expect(lines[at], result.stderr).toMatch(new RegExp(`^error \\[${code}\\]`));
  expect(lines.slice(at).join("\n")).toMatch(knob);
  expect(lines.slice(at).join("\n")).toMatch(/a3r resume local-\d+/);
  expect(result.stderr).not.toMatch(/^\s+at .*\.(ts|js):\d+/m);
  expect(lines.length - at).toBeLessThanOrEqual(2);
}

async function expectFinishedWithFallback(s: Scenario, result: CliResult, code: string): Promise<void> {
  expect(result.code, result.stderr).toBe(0);
  const events = await eventsOf(s);
  expect(fellBack(events).length, JSON.stringify(fellBack(events))).toBeGreaterThan(0);
  // The first step fails for the case's reason; later ones may fail otherwise (a random model's
  // answer that is JSON by chance but unusable: PLANNER_OUTPUT_INVALID), all of them the model's limits.
  const codes = fellBack(events).map((event) => `${String(event.step)}: ${String(event.code)}`);
  expect(fellBack(events)[0]?.code, codes.join("; ")).toBe(code);
  expect(
    codes.every((item) => /: (LLM_BAD_REQUEST|LLM_TIMEOUT|LLM_OUTPUT_INVALID|PLANNER_OUTPUT_INVALID)$/.test(item)),
    codes.join("; "),
  ).toBe(true);
  expect(events.some((event) => event.kind === "campaign.reported")).toBe(true);
  // The plan says who planned it; the report's stop line says who decided the stop.
  expect(await readFile(join(s.campaign, "stages", "1", "plan.md"), "utf8")).toMatch(/stage 1 planned by the heuristic: /);
  const stopped = /^.*Stopped: .*$/m.exec(await readFile(join(s.campaign, "report.md"), "utf8"))?.[0];
  expect(stopped).toMatch(/Stopped: [\w-]+: .*the heuristic made frame, plan stage 1, stage 1 blueprints/);
}

run(`a campaign planned by a random model on a3r's reference server${slowTests ? "" : slowTierNote}`, () => {
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "a3r-local-model-"));
    model = buildReferenceModel(root);
    // (a): a window far below the frame prompt (about 1,200 Qwen tokens); the rest: the model's own.
    [small, roomy, slow] = await Promise.all([
      startReferenceModelServer(model, { maxModelLen: 256, name: "small-window" }),
      startReferenceModelServer(model),
      startReferenceModelServer(model, { name: "slow" }),
    ]);
  }, 600_000);

  afterAll(async () => {
    await Promise.all([small?.close(), roomy?.close(), slow?.close()]);
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("(a) auto: a window smaller than the prompt has the heuristic make every step, recorded, and the ledger counts the refused calls", async () => {
    const s = await scenario(small, {});
    const result = await research(s, "auto");
    expect(result.stderr.split("\n")[0]).toContain("no price known, its calls are counted in tokens and time");
    expect(result.stderr).not.toMatch(/^warning: no price/m);
    await expectFinishedWithFallback(s, result, "LLM_BAD_REQUEST");
    const first = fellBack(await eventsOf(s))[0]!;
    expect(first).toMatchObject({ step: "frame", code: "LLM_BAD_REQUEST" });
    expect(String(first.reason)).toMatch(/does not fit the model's context window of 256 tokens/);
    const calls = await llmCalls(s);
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(calls.every((call) => !call.ok && call.errorCode === "LLM_BAD_REQUEST" && call.costUsd === 0)).toBe(true);
  }, 900_000);

  it("(a) llm: one line naming A3R_LLM_CONTEXT, exit 1; resumed with planner_fallback, it goes on from the frame", async () => {
    const s = await scenario(small, {});
    const failed = await research(s, "llm");
    expectOneLineError(failed, "LLM_BAD_REQUEST", /A3R_LLM_CONTEXT/);
    expect(failed.stderr).toMatch(/window is 256 \(from the server's \/v1\/models/);
    expect((await llmCalls(s)).map((call) => [call.role, call.ok])).toEqual([["frame", false]]);
    await allowFallback(s);
    const resumed = await resume(s);
    await expectFinishedWithFallback(s, resumed, "LLM_BAD_REQUEST");
    expect(fellBack(await eventsOf(s))[0]).toMatchObject({ step: "frame" });
  }, 900_000);

  it("(b) auto: a deadline shorter than one answer is retried once, then the heuristic makes the step: 'the model timed out twice'", async () => {
    // 100 ms is shorter than 64 tokens of either model even on a fast CPU (no KV cache: each
    // token recomputes the whole prompt).
    const s = await scenario(slow, { A3R_LLM_TIMEOUT: "100ms", A3R_LLM_MAX_TOKENS: "64" });
    const result = await research(s, "auto");
    await expectFinishedWithFallback(s, result, "LLM_TIMEOUT");
    const first = fellBack(await eventsOf(s))[0]!;
    expect(first).toMatchObject({ step: "frame", code: "LLM_TIMEOUT" });
    expect(String(first.reason)).toMatch(/the model timed out twice \(deadline 100ms\)/);
    const calls = await llmCalls(s);
    expect(calls.filter((call) => call.role === "frame").map((call) => call.errorCode)).toEqual(["LLM_TIMEOUT", "LLM_TIMEOUT"]);
    expect(calls.every((call) => call.durationMs >= 80)).toBe(true);
  }, 900_000);

  it("(b) llm: one line naming A3R_LLM_TIMEOUT; with it raised (and the fallback allowed), resume answers from the frame on", async () => {
    const s = await scenario(slow, { A3R_LLM_TIMEOUT: "100ms", A3R_LLM_MAX_TOKENS: "64" });
    const failed = await research(s, "llm");
    expectOneLineError(failed, "LLM_TIMEOUT", /A3R_LLM_TIMEOUT/);
    expect(failed.stderr).toMatch(/within A3R_LLM_TIMEOUT \(100ms\), twice/);
    await allowFallback(s);
    const resumed = await resume(s, { A3R_LLM_TIMEOUT: "10m", A3R_LLM_MAX_TOKENS: "8" });
    // The given-up answers of (b) would slow (c) down: they end with their server.
    await slow.close();
    expect(resumed.code, resumed.stderr).toBe(0);
    const calls = await llmCalls(s);
    // The frame's two deadlines, then answers that came back (nonsense, so refused by their schema).
    expect(calls.slice(0, 2).map((call) => call.errorCode)).toEqual(["LLM_TIMEOUT", "LLM_TIMEOUT"]);
    expect(calls.slice(2).some((call) => call.role === "frame" && call.errorCode === "LLM_OUTPUT_INVALID" && call.inputTokens > 0)).toBe(true);
  }, 900_000);

  it("(c) auto: nonsense answers fail their schema after the repair round, and the heuristic makes each step", async () => {
    const s = await scenario(roomy, { A3R_LLM_TIMEOUT: "10m", A3R_LLM_MAX_TOKENS: "8" });
    const result = await research(s, "auto");
    await expectFinishedWithFallback(s, result, "LLM_OUTPUT_INVALID");
    expect(fellBack(await eventsOf(s))[0]).toMatchObject({ step: "frame", code: "LLM_OUTPUT_INVALID" });
    const calls = await llmCalls(s);
    expect(calls.filter((call) => call.role === "frame")).toHaveLength(2);
    expect(calls.every((call) => call.inputTokens > 0 && call.costUsd === 0)).toBe(true);
  }, 900_000);

  it("(c) llm: one line, exit 1; resumed with planner_fallback, the campaign reaches its report", async () => {
    const s = await scenario(roomy, { A3R_LLM_TIMEOUT: "10m", A3R_LLM_MAX_TOKENS: "8" });
    const failed = await research(s, "llm");
    expectOneLineError(failed, "LLM_OUTPUT_INVALID", /planner_fallback: heuristic/);
    await allowFallback(s);
    await expectFinishedWithFallback(s, await resume(s), "LLM_OUTPUT_INVALID");
  }, 900_000);
});

describe.runIf(missing !== undefined)("a campaign planned by a random model on a3r's reference server", () => {
  it.skip(`needs a Python with torch: ${missing}`, () => {});
});
