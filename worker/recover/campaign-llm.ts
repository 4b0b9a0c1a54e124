import { readFile } from "node:fs/promises";
import { readFrontMatter } from "../../blueprints/front-matter.ts";
import { A3rError } from "../../core/errors.ts";
import { ledgerSpending } from "../../campaign/llm-spending.ts";
import { withBudget, type LlmBudgetLimit } from "../../llm/budget.ts";
import type { ChatModel } from "../../llm/index.ts";

/**
 * How a worker's model calls (the diagnosis of unknown failures) are held to the LLM
 * budget of the campaign it works for (found by place: campaign/campaign-of-run.ts), so
 * that they count like the leader's.
 */

/** The topic's LLM budget, or why it could not be read. */
export type CampaignBudget = { ok: true; limit: LlmBudgetLimit } | { ok: false; problem: string };

/**
 * Reads `budgets.llm_tokens` and `budgets.llm_usd` from a campaign's topic.md. The leader
 * validated the whole topic when the campaign began (leader/domain/topic.ts, which the worker may
 * not import); this reads only these two fields, and a value that is not a positive number
 * is reported, not guessed at.
 */
export async function readCampaignBudget(topicFile: string): Promise<CampaignBudget> {
  let text: string;
  try {
    text = await readFile(topicFile, "utf8");
  } catch (error) {
    return { ok: false, problem: `${topicFile} could not be read (${(error as Error).message})` };
  }
  const front = readFrontMatter(text);
  const budgets = front.data.budgets;
  if (budgets === undefined || budgets === null) return { ok: true, limit: {} };
  if (typeof budgets !== "object" || Array.isArray(budgets)) return { ok: false, problem: `${topicFile}: budgets is not a mapping` };
  const limit: LlmBudgetLimit = {};
  for (const [field, key] of [
    ["llm_tokens", "tokens"],
    ["llm_usd", "usd"],
  ] as const) {
    const value = (budgets as Record<string, unknown>)[field];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      const line = front.fieldLines[`budgets.${field}`];
      return { ok: false, problem: `${topicFile}${line === undefined ? "" : `:${line}`}: budgets.${field} is ${JSON.stringify(value)}, not a positive number` };
    }
    limit[key] = value;
  }
  return { ok: true, limit };
}

/**
 * The worker's model held to the campaign's budget, the spending read from `ledgerFile`
 * before each call. A budget that could not be read refuses every call (with the reason):
 * a worker must not spend what nobody can check.
 */
export function budgetedWorkerModel(model: ChatModel, ledgerFile: string, budget: CampaignBudget, names?: { tokens: string; usd: string }): ChatModel {
  if (!budget.ok) {
    return {
      provider: model.provider,
      model: model.model,
      complete: () =>
        Promise.reject(
          new A3rError("LLM_BUDGET_EXCEEDED", `the campaign's language-model budget is unknown (${budget.problem}); the call was not sent`, {
            where: "budgets",
            hint: "Fix budgets.llm_tokens / budgets.llm_usd in the campaign's topic.md.",
          }),
        ),
    };
  }
  return withBudget(model, {
    limit: budget.limit,
    spent: () => ledgerSpending(ledgerFile),
    ...(names === undefined ? {} : { names }),
    hint:
      names === undefined
        ? "Raise budgets.llm_tokens or budgets.llm_usd in the campaign's topic.md (the worker reads it at each call)."
        : `Raise ${names.tokens} or ${names.usd}.`,
  });
}
