import { rename } from "node:fs/promises";
import { appendEvent, campaignPaths } from "../../campaign/index.ts";

/**
 * `a3r resume ID --rebuild`: the leader's checkpoint is set aside (renamed, never deleted:
 * it may still be worth a look) and the campaign starts from a fresh one. That replays the
 * campaign rather than redoing it, because every node's side effect is idempotent: plans
 * come from the same history (a model's answers from leader-answers/), blueprints with the
 * same text are left alone, a launcher finds a run it already started, and analyses read
 * the result directories. Returns the name the old file got, or null when there was none.
 */
export async function setLeaderCheckpointAside(runsDir: string, campaignId: string, now: Date = new Date()): Promise<string | null> {
  const paths = campaignPaths(runsDir, campaignId);
  const aside = `${paths.leaderDatabase}.set-aside-${now
    .toISOString()
    .replaceAll(":", "")
    .replace(/\.\d+Z$/, "Z")}`;
  let moved = false;
  // SQLite's journal files belong to the database they were written for: they go with it.
  for (const suffix of ["", "-wal", "-shm", "-journal"]) {
    try {
      await rename(`${paths.leaderDatabase}${suffix}`, `${aside}${suffix}`);
      if (suffix === "") moved = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  if (!moved) return null;
  await appendEvent(paths.events, "leader.checkpoint_set_aside", { file: aside, reason: "a3r resume --rebuild" });
  return aside;
}
