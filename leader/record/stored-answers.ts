import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CampaignPaths } from "../../campaign/index.ts";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { redactLeaderRecord } from "./record-redaction.ts";

/**
 * Returns the answer stored under `key` in `leader-answers/`, or computes, stores and
 * returns it. A node re-run after a crash gets the same planner answer as before: a model
 * asked twice may answer differently, and the plan on disk must match the one in events.
 * The answer is redacted before it is stored and returned (record-redaction.ts), so the
 * first run and a re-run go on from the same answer.
 */
export async function memoAnswer<T>(paths: CampaignPaths, key: string, compute: () => Promise<T>): Promise<T> {
  const stored = await readStoredAnswer<T>(paths, key);
  if (stored !== undefined) return stored;
  const answer = redactLeaderRecord(await compute());
  await mkdir(join(paths.root, "leader-answers"), { recursive: true });
  await writeFileAtomic(answerFile(paths, key), `${JSON.stringify(answer, null, 2)}\n`);
  return answer;
}

/** The answer the leader stored under `key`, if any. */
export async function readStoredAnswer<T>(paths: CampaignPaths, key: string): Promise<T | undefined> {
  const stored = await readFile(answerFile(paths, key), "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  return stored === undefined ? undefined : (JSON.parse(stored) as T);
}

function answerFile(paths: CampaignPaths, key: string): string {
  return join(paths.root, "leader-answers", `${key}.json`);
}
