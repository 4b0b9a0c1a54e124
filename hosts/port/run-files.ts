import { randomBytes } from "node:crypto";
import { link, open, readdir, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RunRef } from "./launcher.ts";
import { parseLaunchMarker } from "./run-progress.ts";

/**
 * The run-folder file helpers of the launchers that read their run folders through this
 * machine's file system (local, queue daemons, ray's shared workdir). Ssh and Slurm read
 * theirs with one remote script each instead.
 */

/** The file's text, or undefined when it cannot be read (missing, a folder, no permission). */
export async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The last `bytes` of a file (metrics.jsonl grows for days; only its end matters here). */
export async function readTail(path: string, bytes: number): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
    const { size } = await handle.stat();
    const start = Math.max(0, size - bytes);
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    const text = buffer.toString("utf8");
    // Drop a partial first line when the read started mid-file.
    return start > 0 ? text.slice(text.indexOf("\n") + 1) : text;
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/** Every plain file under `root`, as sorted paths relative to it. */
export async function listFiles(root: string, prefix = ""): Promise<string[]> {
  const entries = await readdir(join(root, prefix), { withFileTypes: true }).catch(() => []);
  const files: string[] = [];
  for (const entry of entries) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) files.push(...(await listFiles(root, relative)));
    else if (entry.isFile()) files.push(relative);
  }
  return files.sort();
}

/**
 * Creates `path` holding `text`, complete, or returns false when `path` exists: written to
 * a private draft, then hard-linked (link fails when the name exists, so of two racing
 * launches exactly one wins, and a launcher killed mid-write leaves no empty claim). On a
 * file system without hard links (some FUSE and object-store mounts a shared workdir may
 * be) it falls back to an exclusive create-then-write.
 */
export async function createExclusively(path: string, text: string): Promise<boolean> {
  const draft = `${path}.${process.pid}-${randomBytes(4).toString("hex")}.draft`;
  try {
    await writeFile(draft, text, { flag: "wx" });
    await link(draft, path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP")
      return writeFile(path, text, { flag: "wx" }).then(
        () => true,
        (fallback: NodeJS.ErrnoException) => {
          if (fallback.code === "EEXIST") return false;
          throw fallback;
        },
      );
    throw error;
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}

/**
 * The runs claimed under `<workdir>/<campaign>/<blueprint id>/launch.json`. A folder set
 * aside (a3r stop, then resume) keeps its old launch.json: not a run here now.
 */
export async function claimedRuns(workdir: string): Promise<RunRef[]> {
  const refs: RunRef[] = [];
  for (const campaign of await readdir(workdir).catch(() => [] as string[])) {
    for (const blueprintId of await readdir(join(workdir, campaign)).catch(() => [] as string[])) {
      if (blueprintId.includes(".set-aside-")) continue;
      const marker = parseLaunchMarker(await readText(join(workdir, campaign, blueprintId, "launch.json")));
      if (marker) refs.push({ campaign: marker.campaign, blueprintId: marker.blueprintId });
    }
  }
  return refs;
}
