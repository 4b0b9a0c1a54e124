import { readFile, stat } from "node:fs/promises";
import type { RecordProblem } from "./finding.ts";
import { isRunState, isTerminalRunState, terminalRunStates, type TerminalRunState } from "./run-status.ts";
import { readRunStatus, type RunStatus } from "./status-file.ts";
import { readLease, type Lease } from "./lease.ts";
import { readMetrics, type MetricsRecord } from "./metrics-log.ts";
import { readEvents, type CampaignEvent } from "./event-log.ts";
import { resultDirFileNames, resultDirPaths, type ResultDirPaths } from "./result-dir-paths.ts";

/**
 * Everything a result directory says, parsed, with nothing thrown for bad content: each
 * problem is listed with its file and line, and the audit decides how bad it is. Only a
 * folder that cannot be read at all (permissions) throws.
 *
 * Left out: logs/ and curves.svg contents (only their presence), and result.md's text.
 */
export type ResultDirFile = "blueprint" | "status" | "lease" | "metrics" | "events" | "attempts" | "result" | "curves" | "finishFlag";

export interface FinishFlag {
  /** The flag's text, trimmed. */
  text: string;
  /** The final state it names; undefined when the text is not a terminal state. */
  state: TerminalRunState | undefined;
  modifiedAt: Date;
}

export interface ResultDirSnapshot {
  dir: string;
  paths: ResultDirPaths;
  present: Record<ResultDirFile, boolean>;
  status: RunStatus | undefined;
  finishFlag: FinishFlag | undefined;
  lease: Lease | undefined;
  metrics: { records: MetricsRecord[]; lines: number[] };
  events: { events: CampaignEvent[]; lines: number[] };
  problems: RecordProblem[];
}

const checkedFiles: ResultDirFile[] = ["blueprint", "status", "lease", "metrics", "events", "attempts", "result", "curves", "finishFlag"];

export async function readResultDir(dir: string): Promise<ResultDirSnapshot> {
  const paths = resultDirPaths(dir);
  const present = Object.fromEntries(await Promise.all(checkedFiles.map(async (file) => [file, await isFile(paths[file])]))) as Record<ResultDirFile, boolean>;
  const problems: RecordProblem[] = [];

  const status = await readRunStatus(paths.status);
  problems.push(...status.problems);

  const finishFlag = present.finishFlag ? await readFinishFlag(paths.finishFlag, problems) : undefined;

  let lease: Lease | undefined;
  try {
    lease = await readLease(dir);
  } catch (error) {
    problems.push({ file: paths.lease, line: 1, code: "LEASE_INVALID", message: error instanceof Error ? error.message : String(error) });
  }

  const metrics = await readMetrics(paths.metrics);
  problems.push(...metrics.problems);
  const events = await readEvents(paths.events);
  problems.push(...events.problems);

  return {
    dir,
    paths,
    present,
    status: status.status,
    finishFlag,
    lease,
    metrics: { records: metrics.records, lines: metrics.lines },
    events: { events: events.events, lines: events.lines },
    problems,
  };
}

async function readFinishFlag(path: string, problems: RecordProblem[]): Promise<FinishFlag> {
  const [text, info] = await Promise.all([readFile(path, "utf8"), stat(path)]);
  const trimmed = text.trim();
  const state = isRunState(trimmed) && isTerminalRunState(trimmed) ? trimmed : undefined;
  if (state === undefined) {
    problems.push({
      file: path,
      line: 1,
      code: "FINISH_FLAG_INVALID",
      message: `${resultDirFileNames.finishFlag} says "${trimmed.slice(0, 40)}", which is not a final state (${terminalRunStates.join(", ")})`,
    });
  }
  return { text: trimmed, state, modifiedAt: info.mtime };
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** A folder is a result directory when it has status.json or finish.flag. */
export async function looksLikeResultDir(dir: string): Promise<boolean> {
  const paths = resultDirPaths(dir);
  return (await isFile(paths.status)) || (await isFile(paths.finishFlag));
}
