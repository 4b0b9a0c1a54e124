import { readFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { readFrontMatter } from "../blueprints/front-matter.ts";
import { campaignFileNames } from "../campaign/campaign-paths.ts";
import { A3rError } from "../core/errors.ts";
import { pathExists } from "../core/path-exists.ts";
import { ledgerSpending } from "../llm/budget-ledger.ts";
import { withBudget, type LlmBudgetLimit } from "../llm/budget.ts";
import type { ChatModel } from "../llm/index.ts";

/**
 * How a worker finds the campaign it works for, so that its model calls (the diagnosis of
 * unknown failures) are booked in the campaign's ledger and held to the campaign's LLM
 * budget, like the leader's.
 *
 * The campaign is found by place: a result directory `<campaign>/results/<blueprint id>`
 * whose `<campaign>` holds `topic.md` belongs to that campaign (DESIGN §3; it is where the
 * leader puts result directories, and where the local launcher runs them). Then the ledger
 * is `<campaign>/ledger.jsonl` and the budget is the topic's `budgets.llm_tokens` and
 * `budgets.llm_usd`. Nothing has to be passed along, and a worker started again later
 * finds the same campaign.
 *
 * Left out: a result directory away from its campaign (an ssh or queue host) finds none;
 * there `a3r worker run --ledger <file> --llm-tokens N --llm-usd X` says it explicitly,
 * and the spending counted is that ledger's only.
 */
export interface CampaignOfRun {
  root: string;
  ledgerFile: string;
  topicFile: string;
}

export async function findCampaignOf(resultDir: string): Promise<CampaignOfRun | undefined> {
  const results = dirname(resolve(resultDir));
  if (basename(results) !== campaignFileNames.results) return undefined;
  const root = dirname(results);
  const topicFile = join(root, campaignFileNames.topic);
  if (!(await pathExists(topicFile))) return undefined;
  return { root, ledgerFile: join(root, campaignFileNames.ledger), topicFile };
}

/** The topic's LLM budget, or why it could not be read. */
export type CampaignBudget = { ok: true; limit: LlmBudgetLimit } | { ok: false; problem: string };

/**
 * Reads `budgets.llm_tokens` and `budgets.llm_usd` from a campaign's topic.md. The leader
 * validated the whole topic when the campaign began (leader/topic.ts, which the worker may
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
  for (const [field, key] of [["llm_tokens", "tokens"], ["llm_usd", "usd"]] as const) {
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
    hint: names === undefined
      ? "Raise budgets.llm_tokens or budgets.llm_usd in the campaign's topic.md (the worker reads it at each call)."
      : `Raise ${names.tokens} or ${names.usd}.`,
  });
}
