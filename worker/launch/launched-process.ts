import { readFileSync } from "node:fs";
import { z } from "zod";
import { isGroupAlive, launchProcessGroup, readExitStatus, terminateGroup, type ExitStatus } from "../../core/process-group.ts";
import { pathExists } from "../../core/path-exists.ts";

/**
 * One process group the worker started (the classic command, a swarm server or a swarm
 * client), as recorded in status.json so that a restarted worker can find it again. A
 * record is the process's identity: pid, pgid and the kernel's start time of the pid, so a
 * recycled pid is never mistaken for the run.
 *
 * Left out: what the process is for (the caller's `role`) and restarting it.
 */
export const launchedProcessSchema = z.object({
  role: z.string().min(1),
  pid: z.number().int().positive(),
  pgid: z.number().int().positive(),
  /** /proc/<pid>/stat start time (clock ticks since boot); null where /proc is absent. */
  startTime: z.string().nullable(),
  command: z.string(),
  logFile: z.string(),
  exitFile: z.string(),
});

export type LaunchedProcessRecord = z.infer<typeof launchedProcessSchema>;

/** The start time of a process from /proc (field 22 of stat), or null when unknown. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

export async function launchRecorded(options: {
  role: string;
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  exitFile: string;
  /** The sandbox's words (sandbox-plan.ts), when the run is sandboxed. */
  confine?: readonly string[];
  inheritFds?: readonly number[];
}): Promise<LaunchedProcessRecord> {
  const launched = await launchProcessGroup(options);
  return {
    role: options.role,
    pid: launched.pid,
    pgid: launched.pgid,
    startTime: processStartTime(launched.pid),
    command: options.command,
    logFile: options.logFile,
    exitFile: options.exitFile,
  };
}

/**
 * Whether the recorded command is still running. It has ended when its exit file exists
 * (the wrapper wrote the status) or its group is gone; a live pid with another start time
 * is somebody else's process.
 */
export async function isRecordRunning(record: LaunchedProcessRecord): Promise<boolean> {
  if (await pathExists(record.exitFile)) return false;
  if (!isGroupAlive(record.pgid)) return false;
  const now = processStartTime(record.pid);
  // The leader may be gone while its children live on (then the pgid cannot be reused).
  if (now !== null && record.startTime !== null && now !== record.startTime) return false;
  return true;
}

/** How it ended; kills leftovers of the group (children the command left behind). */
export async function collectExit(record: LaunchedProcessRecord, graceMs: number): Promise<ExitStatus> {
  if (isGroupAlive(record.pgid)) await terminateGroup(record.pgid, graceMs);
  return readExitStatus(record.exitFile);
}

export type StopOutcome = "terminated" | "killed" | "gone" | "not ours";

/**
 * TERM then KILL for the whole group; safe to call on a group that is already gone. Says
 * what it took: "terminated" (ended within the grace period), "killed" (needed KILL),
 * "gone" (nothing was left), "not ours" (the pid now belongs to another process).
 */
export async function stopRecord(record: LaunchedProcessRecord, graceMs: number): Promise<StopOutcome> {
  if (!isGroupAlive(record.pgid)) return "gone";
  const leader = processStartTime(record.pid);
  if (leader !== null && record.startTime !== null && leader !== record.startTime) return "not ours";
  return terminateGroup(record.pgid, graceMs);
}
