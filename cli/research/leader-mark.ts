import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { writeJsonAtomic } from "../../core/atomic-file.ts";

/**
 * Which campaigns have a leader process alive, for `a3r status` (running vs stopped): the
 * leader command writes `<runs>/.leaders/<campaign>.json` with its pid and removes it when it
 * ends. A leader killed with SIGKILL leaves its mark behind; the pid is then dead, so the
 * campaign reads as stopped. Kept beside the campaigns, not in them: it is about this
 * machine's processes, not part of the campaign's record.
 *
 * Left out: leaders on other machines sharing the runs folder, and pid reuse.
 */
export function leaderMarkFile(runsDir: string, campaignId: string): string {
  return join(runsDir, ".leaders", `${campaignId}.json`);
}

export async function markLeaderRunning(runsDir: string, campaignId: string): Promise<() => Promise<void>> {
  const file = leaderMarkFile(runsDir, campaignId);
  await mkdir(join(runsDir, ".leaders"), { recursive: true });
  await writeJsonAtomic(file, { pid: process.pid, startedAt: new Date().toISOString() });
  return async () => {
    await rm(file, { force: true });
  };
}

export async function isLeaderRunning(runsDir: string, campaignId: string): Promise<boolean> {
  let pid: unknown;
  try {
    pid = (JSON.parse(await readFile(leaderMarkFile(runsDir, campaignId), "utf8")) as { pid?: unknown }).pid;
  } catch {
    return false;
  }
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, owned by someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
