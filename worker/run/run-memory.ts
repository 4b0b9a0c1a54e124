import { z } from "zod";
import type { RunStatus } from "../../campaign/index.ts";
import { launchedProcessSchema, type LaunchedProcessRecord } from "../launch/launched-process.ts";
import type { Overrides } from "../../blueprints/index.ts";

/**
 * What a worker must remember about a run beyond the contract fields of status.json, so
 * that a worker started again can take over: the processes (identity, logs, exit files),
 * the overrides and command in force, how many recoveries of each class were made, and
 * the attempt history for result.md. Stored as extra fields of status.json (its schema
 * keeps unknown keys), written atomically with every status change.
 */
const scalar = z.union([z.string(), z.number(), z.boolean()]);

export const runMemorySchema = z.object({
  processes: z.array(launchedProcessSchema).default([]),
  overrides: z.record(z.string(), scalar).default({}),
  command: z.string().nullable().default(null),
  attemptStartedAt: z.string().nullable().default(null),
  classCounts: z.record(z.string(), z.number().int().nonnegative()).default({}),
  swarmUrl: z.string().nullable().default(null),
  metricsFileOffset: z.number().int().nonnegative().default(0),
  history: z.array(z.object({ attempt: z.number().int(), ending: z.string(), change: z.string().optional() })).default([]),
});

/** One attempt in the history result.md lists (finish/result-report.ts). */
export interface AttemptSummary {
  attempt: number;
  /** How the attempt ended, e.g. "out of memory: CUDA out of memory ..." or "succeeded". */
  ending: string;
  /** What was changed before the next attempt, one line (empty for the last). */
  change?: string;
}

export interface RunMemory {
  processes: LaunchedProcessRecord[];
  overrides: Overrides;
  /** A replacement command from a diagnosis; null = the blueprint's. */
  command: string | null;
  attemptStartedAt: string | null;
  classCounts: Record<string, number>;
  swarmUrl: string | null;
  /** The size of $A3R_METRICS_FILE when the attempt launched: its lines before that are earlier attempts'. */
  metricsFileOffset: number;
  history: AttemptSummary[];
}

export function emptyMemory(overrides: Overrides): RunMemory {
  return {
    processes: [],
    overrides: { ...overrides },
    command: null,
    attemptStartedAt: null,
    classCounts: {},
    swarmUrl: null,
    metricsFileOffset: 0,
    history: [],
  };
}

/** Reads the memory back; fields that are missing or broken fall back to a fresh run's. */
export function memoryFromStatus(status: RunStatus | undefined, fallbackOverrides: Overrides): RunMemory {
  const source = (status as Record<string, unknown> | undefined)?.worker;
  const parsed = runMemorySchema.safeParse(source ?? {});
  if (!parsed.success || source === undefined) return emptyMemory(fallbackOverrides);
  return parsed.data as RunMemory;
}

/** The status.json fields that carry the memory. */
export function memoryFields(memory: RunMemory): { worker: RunMemory } {
  return { worker: structuredClone(memory) };
}
