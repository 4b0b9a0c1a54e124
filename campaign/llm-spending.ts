import { ledgerRoles, readLedger, summarizeLedger, type LedgerSummary, type RoleTotals } from "./ledger.ts";
import { formatTokens, formatUsd, type LlmSpending } from "../llm/budget.ts";

/**
 * The campaign ledger as the budget's memory. Kept out of budget.ts (and out of
 * llm/index.ts) so that the model port itself depends on nothing of the campaign; the
 * leader and the worker, which know the campaign, import this file.
 */

/**
 * What the campaign's ledger says was spent on language models: input plus output tokens
 * and dollars of every call booked there, by the leader and by workers, in this process
 * or an earlier one. A ledger that does not exist yet has spent nothing. Invalid lines
 * are skipped (the audit reports them).
 */
export async function ledgerSpending(ledgerFile: string): Promise<LlmSpending> {
  const summary = summarizeLedger((await readLedger(ledgerFile)).entries);
  return { tokens: summary.byKind.llm.tokens, usd: summary.byKind.llm.costUsd };
}

/**
 * Spending per role as a markdown table (role, calls, tokens, USD), for `a3r status` and
 * the report: the known roles in the order a campaign uses them (frame, plan, write,
 * analyze, diagnose, other), then any other role by name, then the total. Roles without
 * calls are left out; a ledger without calls gives one sentence instead of a table.
 */
export function renderSpendingByRole(summary: LedgerSummary): string {
  const { byRole } = summary.llm;
  const others = Object.keys(byRole)
    .filter((role) => !(ledgerRoles as readonly string[]).includes(role))
    .sort();
  const roles = [...ledgerRoles, ...others].filter((role) => (byRole[role]?.calls ?? 0) > 0);
  if (roles.length === 0) return "No language-model calls yet.";
  const row = (name: string, totals: RoleTotals) =>
    `| ${name} | ${totals.calls}${totals.failedCalls > 0 ? ` (${totals.failedCalls} failed)` : ""} | ${formatTokens(totals.inputTokens + totals.outputTokens)} | ${formatUsd(totals.costUsd)} |`;
  return [
    "| role | calls | tokens | USD |",
    "| --- | ---: | ---: | ---: |",
    ...roles.map((role) => row(role, byRole[role]!)),
    row("**total**", summary.llm),
  ].join("\n");
}
