import { readFile } from "node:fs/promises";
import { z } from "zod";
import { runStates, type RunState } from "./run-status.ts";
import type { RecordProblem } from "./finding.ts";
import { describeIssues } from "./jsonl-file.ts";

/**
 * status.json: the current state of one run, replaced atomically on every change.
 * Every field is present; what is not known yet is `null` (a queued run has no pid).
 * Unknown keys survive a read-modify-write so newer writers can add fields.
 *
 * Left out: history (events.jsonl holds it), ownership (lease.json), and the final word
 * (finish.flag, written after the last status).
 */
const isoTime = z.iso.datetime({ offset: true });
const metricValues = z.record(z.string(), z.number());

export const runStatusSchema = z.looseObject({
  state: z.enum(runStates),
  attempt: z.number().int().nonnegative(),
  host: z.string().nullable(),
  pid: z.number().int().positive().nullable(),
  pgid: z.number().int().positive().nullable(),
  startedAt: isoTime.nullable(),
  heartbeatAt: isoTime.nullable(),
  step: z.number().int().nonnegative().nullable(),
  lastMetrics: metricValues.nullable(),
  reason: z.string().nullable(),
});

export type RunStatus = z.infer<typeof runStatusSchema>;

/** A fresh status in the initial state; a writer fills in what it knows. */
export function newRunStatus(fields: Partial<RunStatus> = {}): RunStatus {
  return {
    state: "queued" as RunState,
    attempt: 0,
    host: null,
    pid: null,
    pgid: null,
    startedAt: null,
    heartbeatAt: null,
    step: null,
    lastMetrics: null,
    reason: null,
    ...fields,
  };
}

export type StatusParse = { status: RunStatus; problems: [] } | { status: undefined; problems: RecordProblem[] };

/** Parses status.json text; problems carry the line of the offending field when it can be found. */
export function parseRunStatus(text: string, file: string): StatusParse {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      status: undefined,
      problems: [
        {
          file,
          line: lineOfJsonError(text, message),
          code: "STATUS_NOT_JSON",
          message: `status.json is not valid JSON near line ${lineOfJsonError(text, message)} (its text is not printed)`,
        },
      ],
    };
  }
  const checked = runStatusSchema.safeParse(value);
  if (checked.success) return { status: checked.data, problems: [] };
  return {
    status: undefined,
    problems: checked.error.issues.map((issue) => {
      const field = issue.path[0];
      return {
        file,
        line: typeof field === "string" ? lineOfKey(text, field) : 1,
        code: "STATUS_INVALID",
        message: `status.json field ${describeIssues([issue])}`,
      };
    }),
  };
}

export type StatusRead = StatusParse & { exists: boolean };

export async function readRunStatus(path: string): Promise<StatusRead> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { exists: false, status: undefined, problems: [] };
    throw error;
  }
  return { exists: true, ...parseRunStatus(text, path) };
}

function lineOfKey(text: string, key: string): number {
  const index = text.indexOf(`"${key}"`);
  return index < 0 ? 1 : lineAt(text, index);
}

function lineOfJsonError(text: string, message: string): number {
  const position = /position (\d+)/.exec(message);
  return position ? lineAt(text, Number(position[1])) : 1;
}

export function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index && i < text.length; i += 1) if (text.charCodeAt(i) === 10) line += 1;
  return line;
}
