import { JsonlLedger } from "../../../campaign/ledger.ts";
import { ledgerSpending } from "../../../campaign/llm-spending.ts";
import { withBudget, type LlmBudgetLimit } from "../../../llm/budget.ts";
import { chatModelFromEnv, type ChatModel, type ChatModelDependencies } from "../../../llm/index.ts";

export interface LeaderModelOptions {
  /** The campaign's ledger.jsonl: every call is booked there, and the budget is read from it. */
  ledgerFile: string;
  /** The topic's `budgets.llm_tokens` and `budgets.llm_usd`; unset measures are not limited. */
  budget: LlmBudgetLimit;
  /** What to tell a person when the budget refuses a call (default: llm/budget.ts's). */
  hint?: string;
  /** For tests: fetch, warnings, clock (the sink is always the campaign ledger). */
  dependencies?: Omit<ChatModelDependencies, "sink">;
}

/**
 * The leader's model: the one the environment configures, booked to the campaign ledger,
 * and refused (LLM_BUDGET_EXCEEDED, before sending) once the campaign's budget would be
 * passed. The spending is read from the ledger before each call, so the workers'
 * diagnoses and the calls of an earlier leader process count too.
 */
export async function openLeaderModel(env: NodeJS.ProcessEnv, options: LeaderModelOptions): Promise<ChatModel> {
  const model = await chatModelFromEnv(env, { ...options.dependencies, sink: new JsonlLedger(options.ledgerFile) });
  return withBudget(model, {
    limit: options.budget,
    spent: () => ledgerSpending(options.ledgerFile),
    ...(options.hint === undefined ? {} : { hint: options.hint }),
  });
}
