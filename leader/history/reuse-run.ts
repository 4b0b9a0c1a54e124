import { copyFile, mkdir, readFile, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { appendEvent } from "../../campaign/index.ts";
import { resultDirFileNames, resultDirPaths } from "../../campaign/index.ts";

/**
 * Makes a finished run of an earlier campaign this campaign's result for a blueprint
 * with the same identity: the record files are copied (status, metrics, events, result,
 * curves, finish flag), this campaign's blueprint is written beside them, and the bulky
 * folders (logs, output) are linked, not copied. The copy is assembled in a hidden
 * folder and renamed into place, so a crash leaves either nothing or a whole result;
 * the run's own events.jsonl says `run.reused` with where it came from.
 */
const copiedFiles = ["status", "metrics", "events", "attempts", "result", "curves", "finishFlag"] as const;
const linkedFolders = ["logs", "output"] as const;

export async function materializeReusedRun(options: { source: string; target: string; blueprintFile: string; identityKey: string }): Promise<void> {
  const { source, target } = options;
  // Renamed into place before a crash: the result is whole, nothing to do.
  if (await exists(join(target, resultDirFileNames.events))) {
    const text = await readFile(join(target, resultDirFileNames.events), "utf8");
    if (text.includes('"kind":"run.reused"')) return;
  }
  const from = resultDirPaths(source);
  const staging = join(dirname(target), `.${target.split("/").at(-1)}.reusing`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const into = resultDirPaths(staging);
  for (const file of copiedFiles) {
    if (await exists(from[file])) await copyFile(from[file], into[file]);
  }
  for (const folder of linkedFolders) {
    const path = join(source, folder === "logs" ? resultDirFileNames.logs : folder);
    if (await exists(path)) await symlink(relative(target, path), join(staging, folder));
  }
  await copyFile(options.blueprintFile, into.blueprint);
  if (await exists(into.result)) {
    const text = await readFile(into.result, "utf8");
    await writeFile(
      into.result,
      `> Reused: this result is the run ${source} (same code commit, config, command, seed and overrides); it was not trained again.\n\n${text}`,
    );
  }
  await appendEvent(into.events, "run.reused", { from: source, identity: options.identityKey });
  await rename(staging, target);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}
