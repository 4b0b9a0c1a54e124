import { lstat, readFile, stat } from "node:fs/promises";
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
  const problems: RecordProblem[] = [];
  // A trainer can write into its own result directory, so a file there may be a symlink
  // or a hard link to something it may not read (/etc/shadow): such a file is reported
  // and never opened, so the audit cannot be made to print what lies outside the tree.
  const linked = new Set<ResultDirFile>();
  for (const file of checkedFiles) {
    const link = await linkKind(paths[file]);
    if (link === undefined) continue;
    linked.add(file);
    problems.push({
      file: paths[file],
      line: 1,
      code: "RESULT_FILE_LINKED",
      message: `${resultDirFileNames[file]} is ${link}; a3r writes plain files here, so it was not read (remove it and re-run the worker)`,
    });
  }
  const present = Object.fromEntries(await Promise.all(checkedFiles.map(async (file) => [file, !linked.has(file) && (await isFile(paths[file]))]))) as Record<
    ResultDirFile,
    boolean
  >;

  const status = linked.has("status") ? { exists: true, status: undefined, problems: [] } : await readRunStatus(paths.status);
  problems.push(...status.problems);

  const finishFlag = present.finishFlag ? await readFinishFlag(paths.finishFlag, problems) : undefined;

  let lease: Lease | undefined;
  try {
    lease = linked.has("lease") ? undefined : await readLease(dir);
  } catch (error) {
    problems.push({ file: paths.lease, line: 1, code: "LEASE_INVALID", message: error instanceof Error ? error.message : String(error) });
  }

  const metrics = linked.has("metrics") ? { records: [], lines: [], problems: [] } : await readMetrics(paths.metrics);
  problems.push(...metrics.problems);
  const events = linked.has("events") ? { events: [], lines: [], problems: [] } : await readEvents(paths.events);
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

/** "a symbolic link" or "a hard link (N names)" when the path is one, else undefined. */
async function linkKind(path: string): Promise<string | undefined> {
  try {
    const info = await lstat(path);
    if (info.isSymbolicLink()) return "a symbolic link";
    if (info.isFile() && info.nlink > 1) return `a hard link (${info.nlink} names)`;
    return undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
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
