import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import type { Blueprint } from "../../blueprints/index.ts";

const run = promisify(execFile);

/**
 * What makes two runs the same experiment, so a campaign can take a finished run's result
 * instead of training again: the code (a git commit of a clean checkout), the config
 * file's bytes, the command, the interpreter, the mode, the seed and every override. Time
 * budgets, worker settings, ids and metric choices are left out: they change how a run is
 * watched, not what it computes. Where the code cannot be pinned (not a git checkout,
 * uncommitted changes, a codebase only a remote host has) there is no identity, and the
 * reason says why, so nothing is reused on a guess.
 */
export interface RunIdentity {
  /** sha256 over the parts below, as canonical JSON. */
  key: string;
  parts: {
    mode: string;
    codeRevision: string;
    configSha256: string | null;
    command: string;
    interpreter: string;
    seed: unknown;
    overrides: Record<string, unknown>;
  };
}

export type IdentityResult = { identity: RunIdentity } | { identity: null; reason: string };

/** The identity of a blueprint's run as this machine sees its code and config now. */
export async function runIdentity(blueprint: Blueprint): Promise<IdentityResult> {
  const revision = await cleanRevision(blueprint.codebase);
  if ("reason" in revision) return { identity: null, reason: revision.reason };
  let configSha256: string | null = null;
  if (blueprint.config !== null) {
    try {
      configSha256 = createHash("sha256")
        .update(await readFile(blueprint.config))
        .digest("hex");
    } catch (error) {
      return { identity: null, reason: `its config ${blueprint.config} cannot be read here (${(error as NodeJS.ErrnoException).code ?? "error"})` };
    }
  }
  const overrides = blueprint.frontMatter.overrides;
  const parts: RunIdentity["parts"] = {
    mode: blueprint.mode,
    codeRevision: revision.commit,
    configSha256,
    command: blueprint.command.trim(),
    interpreter: blueprint.venv,
    seed: blueprint.frontMatter.seed ?? null,
    overrides: overrides !== null && typeof overrides === "object" ? sortedKeys(overrides as Record<string, unknown>) : {},
  };
  return { identity: { key: createHash("sha256").update(JSON.stringify(parts)).digest("hex"), parts } };
}

async function cleanRevision(codebase: string): Promise<{ commit: string } | { reason: string }> {
  const git = (...args: string[]) => run("git", ["-C", codebase, ...args], { timeout: 20_000, maxBuffer: 4 * 1024 * 1024 });
  let commit: string;
  try {
    commit = (await git("rev-parse", "--verify", "HEAD")).stdout.trim();
  } catch {
    return { reason: `its codebase ${codebase} is not a git checkout with a commit here, so its code cannot be pinned` };
  }
  try {
    // Untracked files count: a new module beside the trainer changes what runs.
    const dirty = (await git("status", "--porcelain", "--untracked-files=normal")).stdout.trim();
    if (dirty !== "") return { reason: `its codebase ${codebase} has uncommitted changes (${dirty.split("\n").length} path(s)), so its code cannot be pinned` };
  } catch (error) {
    return { reason: `git status failed in ${codebase}: ${(error as Error).message.split("\n")[0]}` };
  }
  return { commit };
}

function sortedKeys(values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(values)
      .sort()
      .map((key) => [key, values[key]]),
  );
}
