import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createScriptedChatModel } from "../llm/index.ts";
import { JsonlLedger } from "./ledger.ts";

/**
 * The LLM layer and the campaign ledger meet only through the sink port: this test plugs
 * the real JSONL ledger into a real (scripted) chat model and checks that every round
 * trip, the repair round included, lands in ledger.jsonl and is totalled per role.
 */
let folder: string;
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("LLM calls booked in the campaign ledger", () => {
  it("writes one entry per round trip with tokens and cost, and totals them per role", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-ledger-llm-"));
    const ledger = new JsonlLedger(join(folder, "ledger.jsonl"));
    const model = createScriptedChatModel(
      [
        { text: "The topic asks which learning rate learns fastest.", usage: { inputTokens: 120, outputTokens: 30 } },
        { parsed: { stages: "one" }, usage: { inputTokens: 200, outputTokens: 40 } },
        { parsed: { stages: 2 }, usage: { inputTokens: 260, outputTokens: 20 } },
      ],
      { sink: ledger },
      { model: "claude-sonnet-4-6" },
    );

    await model.complete({ role: "frame", messages: [{ role: "user", content: "frame this topic" }], maxTokens: 200 });
    const plan = await model.complete({
      role: "plan",
      messages: [{ role: "user", content: "plan stage 1" }],
      schema: z.object({ stages: z.number().int() }),
      maxTokens: 200,
    });
    expect(plan.parsed).toEqual({ stages: 2 });

    const { entries, problems } = await ledger.read();
    expect(problems).toEqual([]);
    // The first plan answer fails validation: booked as not ok, then the repair round.
    expect(entries.map((entry) => (entry.kind === "llm" ? [entry.role, entry.ok, entry.inputTokens, entry.errorCode] : []))).toEqual([
      ["frame", true, 120, undefined],
      ["plan", false, 200, "LLM_OUTPUT_INVALID"],
      ["plan", true, 260, undefined],
    ]);
    for (const entry of entries) {
      if (entry.kind === "llm") expect(entry.costUsd).toBeGreaterThan(0);
    }

    const summary = await ledger.summarize();
    expect(summary.llm.byRole.plan?.calls).toBe(2);
    expect(summary.llm.byRole.plan?.inputTokens).toBe(460);
    expect(summary.llm.byRole.frame?.outputTokens).toBe(30);
  });
});
