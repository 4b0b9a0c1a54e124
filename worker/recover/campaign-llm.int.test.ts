import { execFile } from "node:child_process";
import { access, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonlLedger, readEvents, readRunStatus } from "../../campaign/index.ts";
import { fixtureFolder } from "../__fixtures__/fixture-blueprint.ts";
import { findCampaignOf } from "../../campaign/campaign-of-run.ts";
import { readCampaignBudget } from "./campaign-llm.ts";

/**
 * A worker dispatched into a campaign folder (`<campaign>/results/<id>`, as the leader and
 * the local launcher place it) spends the campaign's LLM budget: its diagnosis calls are
 * booked in the campaign's ledger with role "diagnose", and once the budget would be
 * passed the model is not asked; the worker follows its playbook instead and says so, and
 * the run is never failed over money. Real `a3r worker run` processes, a scripted model.
 */
const cli = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));
let campaign: Awaited<ReturnType<typeof fixtureFolder>>;
beforeAll(async () => {
  campaign = await fixtureFolder();
});
afterAll(async () => {
  await campaign.cleanup();
});

function workerRun(blueprint: string, env: Record<string, string>, args: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const clean = { ...process.env, A3R_LLM_PROVIDER: "", ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" };
    execFile(process.execPath, [cli, "worker", "run", blueprint, ...args], { env: { ...clean, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

async function writeTopic(budgets: string): Promise<void> {
  await writeFile(join(campaign.dir, "topic.md"), `---\nmetric: { name: reward_mean, goal: maximize }\nbudgets: ${budgets}\n---\nWhy does the trainer fail?\n`);
}

async function writeScript(name: string, steps: unknown[]): Promise<string> {
  const path = join(campaign.dir, name);
  await writeFile(path, JSON.stringify({ steps }));
  return path;
}

describe("the worker's diagnosis spends the campaign's LLM budget", () => {
  it("books a diagnosis in the campaign ledger, then is refused by the budget and falls back to the playbook", async () => {
    await writeTopic("{ stages: 2, llm_tokens: 20000 }");
    const ledger = new JsonlLedger(join(campaign.dir, "ledger.jsonl"));
    const script = await writeScript("diagnose-once.json", [
      // Tries a change that does not help; its 18,100 tokens leave too little for a second call.
      {
        parsed: { diagnosis: "Maybe the warm-up is too short.", retry: true, overrides: { warmup_steps: 10 } },
        usage: { inputTokens: 18000, outputTokens: 100 },
      },
      { parsed: { diagnosis: "never asked", retry: false } },
    ]);
    const { path, resultDir } = await campaign.write({ id: "over-budget", command: "node trainer.mjs --unknown-error" });

    const run = await workerRun(path, { A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script }, ["--quiet"]);
    expect(run.stderr).not.toMatch(/error \[/);
    expect(run.code).toBe(1);

    // The campaign ledger has the one diagnosis; the result directory has no ledger of its own.
    const summary = await ledger.summarize();
    expect(summary.llm.byRole.diagnose.calls).toBe(1);
    expect(summary.llm.byRole.diagnose.inputTokens).toBe(18000);
    await expect(access(join(resultDir, "ledger.jsonl"))).rejects.toThrow();

    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.filter((event) => event.kind === "diagnosis.applied")).toHaveLength(1);
    const skipped = events.filter((event) => event.kind === "diagnosis.skipped");
    expect(skipped).toHaveLength(1);
    expect(JSON.stringify(skipped[0])).toContain("budgets.llm_tokens would be exceeded: 18,100 tokens spent");
    // Attempt 1 diagnosed, attempt 2 retried as the playbook says, attempt 3 fails: unknown allows two recoveries.
    expect(events.filter((event) => event.kind === "run.launched")).toHaveLength(3);

    const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
    expect(attempts).toContain("No model diagnosis: language-model budget budgets.llm_tokens would be exceeded");
    expect(attempts).toContain("Falling back to the deterministic playbook: relaunch without changes");
    const status = (await readRunStatus(join(resultDir, "status.json"))).status!;
    expect(status.state).toBe("failed");
    expect(status.reason).toContain("gave up after 2 recoveries");
    expect(status.reason).not.toContain("budget");
  });

  it("asks nothing at all when the campaign's ledger already holds the budget, even where the model would have fixed the run", async () => {
    await writeTopic("{ llm_usd: 5, llm_tokens: 3000 }");
    await new JsonlLedger(join(campaign.dir, "ledger.jsonl")).record({
      kind: "llm",
      role: "plan",
      provider: "anthropic",
      model: "claude-sonnet-4-6",
      inputTokens: 2500,
      outputTokens: 0,
      cachedTokens: 0,
      costUsd: 0.0075,
      durationMs: 5,
      ok: true,
    });
    const script = await writeScript("never.json", [{ parsed: { diagnosis: "drop the flag", retry: true, command: "node trainer.mjs --steps 3" } }]);
    const { path, resultDir } = await campaign.write({ id: "spent-before", command: "node trainer.mjs --steps 3 --unknown-error" });

    expect((await workerRun(path, { A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script }, ["--quiet"])).code).toBe(1);
    const events = (await readEvents(join(resultDir, "events.jsonl"))).events;
    expect(events.filter((event) => event.kind === "diagnosis.skipped")).toHaveLength(2);
    expect(events.filter((event) => event.kind === "diagnosis.applied")).toHaveLength(0);
    const summary = await new JsonlLedger(join(campaign.dir, "ledger.jsonl")).summarize();
    expect(summary.llm.byRole.diagnose.calls).toBe(1); // the first test's; none from this run
  });

  it("--llm-tokens gives a run outside any campaign its budget over --ledger", async () => {
    const elsewhere = await fixtureFolder();
    try {
      const ledgerFile = join(elsewhere.dir, "costs.jsonl");
      const script = join(elsewhere.dir, "never.json");
      await writeFile(script, JSON.stringify([{ parsed: { diagnosis: "drop the flag", retry: true, command: "node trainer.mjs --steps 3" } }]));
      const { path, resultDir } = await elsewhere.write({ id: "flag-budget", command: "node trainer.mjs --unknown-error" });
      expect(
        (await workerRun(path, { A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script }, ["--quiet", "--ledger", ledgerFile, "--llm-tokens", "100"])).code,
      ).toBe(1);
      const attempts = await readFile(join(resultDir, "attempts.md"), "utf8");
      expect(attempts).toContain("No model diagnosis: language-model budget --llm-tokens would be exceeded: 0 tokens spent");
      expect((await new JsonlLedger(ledgerFile).summarize()).llm.calls).toBe(0);
    } finally {
      await elsewhere.cleanup();
    }
  });

  it("refuses a budget flag that is not a positive number", async () => {
    const { path } = await campaign.write({ id: "bad-flag", command: "node trainer.mjs --steps 1" });
    const run = await workerRun(path, {}, ["--llm-usd", "-3"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--llm-usd takes a positive number, such as 20.");
  });
});

describe("finding a run's campaign", () => {
  it("knows a result directory in <campaign>/results/ with a topic.md, and nothing else", async () => {
    const elsewhere = await fixtureFolder();
    try {
      await mkdir(join(elsewhere.dir, "results", "x"), { recursive: true });
      expect(await findCampaignOf(join(elsewhere.dir, "results", "x"))).toBeUndefined();
      await writeFile(join(elsewhere.dir, "topic.md"), "Plain question?\n");
      expect(await findCampaignOf(join(elsewhere.dir, "results", "x"))).toEqual({
        root: elsewhere.dir,
        ledgerFile: join(elsewhere.dir, "ledger.jsonl"),
        topicFile: join(elsewhere.dir, "topic.md"),
      });
      expect(await findCampaignOf(join(elsewhere.dir, "other", "x"))).toBeUndefined();
      expect(await readCampaignBudget(join(elsewhere.dir, "topic.md"))).toEqual({ ok: true, limit: {} });
    } finally {
      await elsewhere.cleanup();
    }
  });

  it("reads the topic's LLM budget, and reports a value that is not a positive number with its line", async () => {
    await writeTopic("{ llm_tokens: 5000, llm_usd: 2.5 }");
    expect(await readCampaignBudget(join(campaign.dir, "topic.md"))).toEqual({ ok: true, limit: { tokens: 5000, usd: 2.5 } });
    await writeFile(join(campaign.dir, "topic.md"), "---\nmetric: { name: m, goal: maximize }\nbudgets:\n  llm_usd: lots\n---\nq\n");
    expect(await readCampaignBudget(join(campaign.dir, "topic.md"))).toEqual({
      ok: false,
      problem: `${join(campaign.dir, "topic.md")}:4: budgets.llm_usd is "lots", not a positive number`,
    });
  });
});
