import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { JsonlLedger } from "./ledger.ts";
import { isA3rError } from "../core/errors.ts";
import { ledgerSpending } from "./llm-spending.ts";
import { withBudget } from "../llm/budget.ts";
import { createScriptedChatModel } from "../llm/index.ts";

/**
 * The budget's memory is the campaign ledger on disk: what one process booked is what the
 * next one (a resumed leader, a worker) is held to.
 */
let folder: string | undefined;
afterEach(async () => {
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe("a budget kept by the campaign ledger", () => {
  it("books calls in ledger.jsonl and refuses the call that would pass the limit, in this process and the next", async () => {
    folder = await mkdtemp(join(tmpdir(), "a3r-budget-"));
    const ledgerFile = join(folder, "ledger.jsonl");
    expect(await ledgerSpending(ledgerFile)).toEqual({ tokens: 0, usd: 0 });

    const ledger = new JsonlLedger(ledgerFile);
    const open = () =>
      withBudget(
        createScriptedChatModel(
          [{ text: "framed", usage: { inputTokens: 4000, outputTokens: 1000 } }, { text: "planned" }],
          { sink: ledger },
          { model: "claude-sonnet-4-6" },
        ),
        {
          limit: { tokens: 6000 },
          spent: () => ledgerSpending(ledgerFile),
        },
      );

    const leader = open();
    await leader.complete({ role: "frame", messages: [{ role: "user", content: "frame it" }], maxTokens: 1000 });
    const spent = await ledgerSpending(ledgerFile);
    expect(spent.tokens).toBe(5000);
    expect(spent.usd).toBeCloseTo((4000 * 3 + 1000 * 15) / 1e6, 8);

    const refused = await leader.complete({ role: "plan", messages: [{ role: "user", content: "plan it" }], maxTokens: 1000 }).catch((error: unknown) => error);
    expect(isA3rError(refused, "LLM_BUDGET_EXCEEDED")).toBe(true);
    expect((refused as Error).message).toContain("5,000 tokens spent");

    // A resumed leader starts from the ledger, not from zero.
    const resumed = open();
    await expect(resumed.complete({ role: "plan", messages: [{ role: "user", content: "plan it" }], maxTokens: 1000 })).rejects.toThrow(
      /5,000 tokens spent.*over the budget of 6,000 tokens/,
    );
    const { entries } = await ledger.read();
    expect(entries.map((entry) => (entry.kind === "llm" ? entry.role : entry.kind))).toEqual(["frame"]);
  });
});
