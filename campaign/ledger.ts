import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import type { RecordProblem } from "./finding.ts";
import { appendJsonLine, describeIssues, readJsonLines } from "./jsonl-file.ts";

/**
 * The cost ledger of a campaign (`ledger.jsonl`): what the language models and the GPUs
 * cost. Two entry kinds, exactly these fields (unknown fields are refused so a typo does
 * not silently drop a cost):
 *
 * - llm: one model call. `cachedTokens` is the part of `inputTokens` served from a prompt
 *   cache (already included in `inputTokens`, not on top of it).
 * - gpu: one run's use of GPUs. `hours` is wall-clock hours the run held `gpus` GPUs, so
 *   the GPU-hours of an entry are `gpus * hours`.
 *
 * `importedFrom` marks an entry copied from a run's own ledger (`<blueprint id>#<line>` of
 * `results/<id>/ledger.jsonl`, written by a worker on a host that could not reach the
 * campaign's): the copy is made once per line, and the mark is how a re-run knows.
 *
 * `role` is one of `ledgerRoles` by convention, but any lowercase name is accepted and
 * totalled under its own name: the LLM layer books unknown roles as given, and refusing
 * one would fail a model call over bookkeeping.
 *
 * Left out: prices (the LLM layer computes `costUsd`), budgets (the leader enforces them
 * before a step), and deduplication (each call or run is recorded once by its writer).
 */
export const ledgerRoles = ["frame", "plan", "write", "analyze", "diagnose", "other"] as const;
export type KnownLedgerRole = (typeof ledgerRoles)[number];
export type LedgerRole = KnownLedgerRole | (string & {});

const count = z.number().int().nonnegative();
const amount = z.number().nonnegative().refine(Number.isFinite, "must be a finite number");
const time = z.iso.datetime({ offset: true });

export const llmLedgerEntrySchema = z.strictObject({
  time,
  kind: z.literal("llm"),
  role: z.string().regex(/^[a-z][a-z0-9_-]{0,39}$/, "a lowercase role name such as plan or analyze"),
  provider: z.string().min(1),
  model: z.string().min(1),
  inputTokens: count,
  outputTokens: count,
  cachedTokens: count,
  costUsd: amount,
  durationMs: amount,
  ok: z.boolean(),
  errorCode: z.string().min(1).optional(),
  importedFrom: z.string().min(1).optional(),
});

export const gpuLedgerEntrySchema = z.strictObject({
  time,
  kind: z.literal("gpu"),
  blueprintId: z.string().min(1),
  host: z.string().min(1),
  gpus: count,
  hours: amount,
  importedFrom: z.string().min(1).optional(),
});

export const ledgerEntrySchema = z.discriminatedUnion("kind", [llmLedgerEntrySchema, gpuLedgerEntrySchema]);

export type LlmLedgerEntry = z.infer<typeof llmLedgerEntrySchema>;
export type GpuLedgerEntry = z.infer<typeof gpuLedgerEntrySchema>;
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;

/** What a writer hands in: `time` may be left out and is then the moment of recording. */
export type LedgerEntryInput = (Omit<LlmLedgerEntry, "time"> & { time?: string }) | (Omit<GpuLedgerEntry, "time"> & { time?: string });

/**
 * Where the LLM layer and the worker report costs. Left out: reading back (only the
 * JSONL ledger can), and failure policy (a sink that throws makes the caller's step fail,
 * so a lost cost is never silent).
 */
export interface LedgerSink {
  record(entry: LedgerEntryInput): Promise<void> | void;
}

export interface RoleTotals {
  calls: number;
  failedCalls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  costUsd: number;
  durationMs: number;
}

export interface LedgerSummary {
  /** `byRole` always has the known roles (zero when unused), plus any other role booked. */
  llm: RoleTotals & { byRole: Record<KnownLedgerRole, RoleTotals> & Record<string, RoleTotals> };
  gpu: { entries: number; gpuHours: number; byBlueprint: Record<string, number>; byHost: Record<string, number> };
  byKind: { llm: { entries: number; tokens: number; costUsd: number }; gpu: { entries: number; gpuHours: number } };
}

export interface LedgerRead {
  entries: LedgerEntry[];
  problems: RecordProblem[];
}

function emptyRoleTotals(): RoleTotals {
  return { calls: 0, failedCalls: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0, costUsd: 0, durationMs: 0 };
}

function addCall(totals: RoleTotals, entry: LlmLedgerEntry): void {
  totals.calls += 1;
  if (!entry.ok) totals.failedCalls += 1;
  totals.inputTokens += entry.inputTokens;
  totals.outputTokens += entry.outputTokens;
  totals.cachedTokens += entry.cachedTokens;
  totals.costUsd += entry.costUsd;
  totals.durationMs += entry.durationMs;
}

/** Totals per role and per kind: tokens, dollars, GPU-hours. Pure. */
export function summarizeLedger(entries: readonly LedgerEntry[]): LedgerSummary {
  const byRole = Object.fromEntries(ledgerRoles.map((role) => [role, emptyRoleTotals()])) as Record<KnownLedgerRole, RoleTotals> & Record<string, RoleTotals>;
  const llm = { ...emptyRoleTotals(), byRole };
  const gpu = { entries: 0, gpuHours: 0, byBlueprint: {} as Record<string, number>, byHost: {} as Record<string, number> };
  for (const entry of entries) {
    if (entry.kind === "llm") {
      addCall(llm, entry);
      if (!Object.hasOwn(byRole, entry.role)) byRole[entry.role] = emptyRoleTotals();
      addCall(byRole[entry.role]!, entry);
    } else {
      const gpuHours = entry.gpus * entry.hours;
      gpu.entries += 1;
      gpu.gpuHours += gpuHours;
      addTo(gpu.byBlueprint, entry.blueprintId, gpuHours);
      addTo(gpu.byHost, entry.host, gpuHours);
    }
  }
  return {
    llm,
    gpu,
    byKind: {
      llm: { entries: llm.calls, tokens: llm.inputTokens + llm.outputTokens, costUsd: llm.costUsd },
      gpu: { entries: gpu.entries, gpuHours: gpu.gpuHours },
    },
  };
}

/** Validates an entry (filling in `time`); throws SCHEMA_INVALID naming the fields. */
export function parseLedgerEntry(entry: LedgerEntryInput | unknown, now: Date = new Date(), where?: string): LedgerEntry {
  const withTime = isRecord(entry) && entry.time === undefined ? { ...entry, time: now.toISOString() } : entry;
  const checked = ledgerEntrySchema.safeParse(withTime);
  if (checked.success) return checked.data;
  throw new A3rError("SCHEMA_INVALID", `ledger entry is invalid: ${describeIssues(checked.error.issues)}`, {
    ...(where === undefined ? {} : { where }),
    hint: "an llm entry has exactly role, provider, model, inputTokens, outputTokens, cachedTokens, costUsd, durationMs, ok, errorCode?, importedFrom?; a gpu entry blueprintId, host, gpus, hours, importedFrom?",
  });
}

export async function readLedger(path: string): Promise<LedgerRead> {
  const content = await readJsonLines(path);
  const entries: LedgerEntry[] = [];
  const problems = [...content.problems];
  for (const { line, value } of content.lines) {
    const checked = ledgerEntrySchema.safeParse(value);
    if (checked.success) entries.push(checked.data);
    else problems.push({ file: path, line, code: "LEDGER_ENTRY_INVALID", message: `ledger entry is invalid: ${describeIssues(checked.error.issues)}` });
  }
  problems.sort((a, b) => a.line - b.line);
  return { entries, problems };
}

/** The campaign's ledger file, usable as the LLM layer's sink. */
export class JsonlLedger implements LedgerSink {
  constructor(readonly path: string) {}

  async record(entry: LedgerEntryInput): Promise<void> {
    await appendJsonLine(this.path, parseLedgerEntry(entry, new Date(), this.path));
  }

  read(): Promise<LedgerRead> {
    return readLedger(this.path);
  }

  /** Totals of every valid entry; invalid lines are skipped here and reported by `read`. */
  async summarize(): Promise<LedgerSummary> {
    return summarizeLedger((await readLedger(this.path)).entries);
  }
}

/** Own keys only: an id such as "constructor" must not hit Object.prototype. */
function addTo(totals: Record<string, number>, key: string, amount: number): void {
  totals[key] = (Object.hasOwn(totals, key) ? totals[key]! : 0) + amount;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
