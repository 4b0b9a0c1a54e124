import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { JsonlLedger } from "../../campaign/ledger.ts";
import { openLeaderModel } from "./planner-choice.ts";

/** The leader's model from the environment: booked in the campaign ledger, held to the topic's budget. */
let folder: string | undefined;
afterEach(async () => {
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe("openLeaderModel", () => {
  it("books every call in the campaign ledger and refuses the one that would pass the budget", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-leader-model-"));
    const script = join(folder, "model.yaml");
    await writeFile(script, "steps:\n  - text: framed\n    usage: { inputTokens: 700, outputTokens: 100 }\n  - text: never sent\n");
    const ledgerFile = join(folder, "ledger.jsonl");
    const env = { A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script };
    const model = await openLeaderModel(env, { ledgerFile, budget: { tokens: 1000 } });
    expect(model.provider).toBe("scripted");

    expect((await model.complete({ role: "frame", messages: [{ role: "user", content: "frame" }], maxTokens: 100 })).text).toBe("framed");
    await expect(model.complete({ role: "plan", messages: [{ role: "user", content: "plan" }], maxTokens: 300 })).rejects.toMatchObject({
      code: "LLM_BUDGET_EXCEEDED",
      where: "budgets.llm_tokens",
      message: expect.stringContaining("800 tokens spent"),
    });
    const summary = await new JsonlLedger(ledgerFile).summarize();
    expect(summary.llm.calls).toBe(1);
    expect(summary.llm.byRole.frame.inputTokens).toBe(700);
  });

  it("without a budget, does not limit", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-leader-model-"));
    const ledgerFile = join(folder, "ledger.jsonl");
    await new JsonlLedger(ledgerFile).record({
      kind: "llm",
      role: "plan",
      provider: "p",
      model: "m",
      inputTokens: 9e9,
      outputTokens: 0,
      cachedTokens: 0,
      costUsd: 9e3,
      durationMs: 1,
      ok: true,
    });
    const script = join(folder, "model.yaml");
    await writeFile(script, "- text: fine\n");
    const model = await openLeaderModel({ A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: script }, { ledgerFile, budget: {} });
    expect((await model.complete({ messages: [{ role: "user", content: "go" }], maxTokens: 10 })).text).toBe("fine");
  });
});
