import { createHash } from "node:crypto";
import { findTaggedProcesses, terminateProcesses } from "../../core/process-group.ts";

/**
 * Every process of a run carries `A3R_RUN_ID` in its environment. A process group does not
 * hold a run together: a child that calls `setsid` (a daemonising helper, some launchers)
 * leaves the group and its session, and TERM/KILL to the group miss it. The environment is
 * inherited across both, so after stopping the groups the worker looks for the tag in
 * /proc/<pid>/environ and stops what is left (and reports it).
 *
 * The id is derived from the result directory, so a worker started again (re-attach) finds
 * the processes a dead worker launched. Left out: a program that clears its environment
 * (only a cgroup per run would hold it, which the worker cannot create everywhere).
 */
export const runTagVariable = "A3R_RUN_ID";

export function runTagOf(resultDir: string): string {
  return `run-${createHash("sha256").update(resultDir).digest("hex").slice(0, 20)}`;
}

export interface EscapedProcess {
  pid: number;
  command: string;
  outcome: "terminated" | "killed" | "gone";
}

/** Stops the run's processes that outlived its process groups; returns what it found. */
export async function stopEscapedProcesses(resultDir: string, graceMs: number): Promise<EscapedProcess[]> {
  const found = await findTaggedProcesses(runTagVariable, runTagOf(resultDir));
  if (found.length === 0) return [];
  const stopped = await terminateProcesses(found, graceMs);
  return stopped.map(({ pid, command, outcome }) => ({ pid, command, outcome }));
}
