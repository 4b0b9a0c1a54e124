import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { analyzeBlueprint } from "../../blueprints/index.ts";
import { isTerminalRunState, JsonlLedger, ledgerEntrySchema, readLedger, readResultDir, type CampaignPaths } from "../../campaign/index.ts";
import { readJsonLines } from "../../campaign/jsonl-file.ts";
import type { LlmAllowance } from "../../hosts/index.ts";
import type { LlmSpending } from "../../llm/budget.ts";
import type { TopicBudgets } from "../domain/topic.ts";

/**
 * The costs of runs on hosts that cannot reach the campaign's ledger (ssh and queue
 * hosts): a worker there books its diagnosis calls and GPU-hours in its own
 * `<result dir>/ledger.jsonl`, held to an allowance given at launch. Both halves live
 * here so the campaign's LLM budget covers every call, wherever it was made:
 *
 * - before a launch, each run gets its share of what is left of the budget;
 * - after a fetch, the run's ledger is copied into the campaign's, once per line;
 * - a finished run that booked no GPU-hours at all is booked from its status.json.
 *
 * A run in the campaign folder (local hosts) books in the campaign's ledger directly and
 * is held to its live budget; it has no ledger of its own to import.
 */

/**
 * What one run of a stage may spend on model calls: what is left of each budget, split
 * evenly over the stage's runs. None when the topic sets no LLM budget. Never zero: a
 * budget that is spent leaves 1 token or a millionth of a dollar, which refuses every
 * call, since the worker's flags (and the queue's job data) take positive numbers.
 *
 * Left out: a stage on both kinds of host. Local runs are held to the campaign's live
 * ledger, which counts a remote run's calls only once its ledger is imported, so such a
 * stage can pass the budget by what its remote runs spend meanwhile (at most their shares).
 */
export function llmAllowanceFor(budgets: Pick<TopicBudgets, "llmTokens" | "llmUsd">, spent: LlmSpending, stageRuns: number): LlmAllowance | undefined {
  if (budgets.llmTokens === undefined && budgets.llmUsd === undefined) return undefined;
  const share = (limit: number, used: number) => Math.max(0, limit - used) / Math.max(1, stageRuns);
  return {
    ...(budgets.llmTokens === undefined ? {} : { tokens: Math.max(1, Math.floor(share(budgets.llmTokens, spent.tokens))) }),
    ...(budgets.llmUsd === undefined ? {} : { usd: Math.max(1e-6, share(budgets.llmUsd, spent.usd)) }),
  };
}

/**
 * Copies the entries of each run's own ledger (fetched with its result directory) into
 * the campaign's, each marked `importedFrom: "<blueprint id>#<line>"`; a line already
 * imported is skipped, so a re-run after a crash adds nothing twice and a later fetch
 * adds only the new lines. Invalid lines stay behind (the result directory's audit names
 * them), and so does a GPU entry naming another run. Returns the runs whose entries are in the campaign's ledger now (imported by
 * this call or an earlier one), the same after a re-run.
 */
export async function importRunLedgers(paths: CampaignPaths, blueprintIds: readonly string[]): Promise<string[]> {
  const imported = new Set((await readLedger(paths.ledger)).entries.flatMap((entry) => (entry.importedFrom === undefined ? [] : [entry.importedFrom])));
  const ledger = new JsonlLedger(paths.ledger);
  const fromRuns = new Set<string>();
  for (const blueprintId of blueprintIds) {
    const runLedger = await readJsonLines(join(paths.result(blueprintId), "ledger.jsonl"));
    for (const { line, value } of runLedger.lines) {
      const mark = `${blueprintId}#${line}`;
      const checked = ledgerEntrySchema.safeParse(value);
      // A GPU entry of another run is not this run's to book (it would hide that run's own).
      const belongs = checked.success && (checked.data.kind !== "gpu" || checked.data.blueprintId === blueprintId);
      if (!imported.has(mark) && checked.success && belongs) {
        await ledger.record({ ...checked.data, importedFrom: mark });
        imported.add(mark);
      }
      if (imported.has(mark)) fromRuns.add(blueprintId);
    }
  }
  return blueprintIds.filter((id) => fromRuns.has(id));
}

/**
 * Books GPU-hours for finished runs that booked none. A worker books its own run: in the
 * campaign ledger when its result directory lies in the campaign folder (local hosts),
 * else in its own ledger, which importRunLedgers copies over first. A run whose worker
 * booked nothing (killed before its end) is booked from its fetched status.json: its
 * GPUs × start to last heartbeat (a slight undercount: the last beat comes up to one
 * interval before the end). Returns the blueprint ids it booked.
 */
export async function bookUnbookedGpuHours(paths: CampaignPaths, blueprintFiles: readonly string[]): Promise<string[]> {
  const { entries } = await readLedger(paths.ledger);
  const booked = new Set(entries.filter((entry) => entry.kind === "gpu").map((entry) => entry.blueprintId));
  const ledger = new JsonlLedger(paths.ledger);
  const added: string[] = [];
  for (const file of blueprintFiles) {
    const { blueprint } = analyzeBlueprint(await readFile(file, "utf8"), file);
    const gpus = Number(blueprint?.frontMatter.gpus ?? 0);
    if (blueprint === undefined || booked.has(blueprint.id) || !Number.isInteger(gpus) || gpus <= 0) continue;
    const { status } = await readResultDir(paths.result(blueprint.id));
    if (!status || !isTerminalRunState(status.state) || status.startedAt === null || status.heartbeatAt === null) continue;
    const hours = Math.max(0, Date.parse(status.heartbeatAt) - Date.parse(status.startedAt)) / 3_600_000;
    await ledger.record({ kind: "gpu", blueprintId: blueprint.id, host: status.host ?? "unknown", gpus, hours });
    added.push(blueprint.id);
  }
  return added;
}
