import { lstat, realpath } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { A3rError } from "../../core/errors.ts";

/**
 * Where a run's files really go. The blueprint audit confines result directories by their
 * spelling; a symlink inside an allowed root would still send the worker's writes (and
 * `rm`-like cleanups of whoever trusts the folder) somewhere else. So the worker, before
 * it writes anything:
 *
 * - refuses a result directory that is itself a symbolic link;
 * - resolves the real path (of the deepest part that exists, plus the rest) and, when
 *   there are allowed roots (the caller's, or the campaign's `results/` folder for a run
 *   placed there), refuses a real path outside every root's own real path.
 *
 * Left out: a link created after the check (the worker's own folder is not shared with the
 * run's writers that could race it, and the check repeats at every start).
 */
export async function confineResultDir(resultDir: string, allowedRoots: readonly string[]): Promise<string> {
  const lexical = resolve(resultDir);
  const info = await lstat(lexical).catch(() => undefined);
  if (info?.isSymbolicLink()) {
    const target = await realpath(lexical).catch(() => "(a missing target)");
    throw new A3rError("RESULT_DIR_UNSAFE", `the result directory ${lexical} is a symbolic link (to ${target}); the worker writes only into a real folder`, {
      where: lexical,
      hint: "give the blueprint's Result Directory as a real folder (remove the link, or point the blueprint at the link's target)",
    });
  }
  const real = await realPathOf(lexical);
  if (allowedRoots.length === 0) return real;
  const roots = await Promise.all(allowedRoots.map((root) => realPathOf(resolve(root))));
  if (!roots.some((root) => real.startsWith(root.endsWith(sep) ? root : `${root}${sep}`))) {
    const linked = real !== lexical;
    throw new A3rError(
      "RESULT_DIR_UNSAFE",
      linked
        ? `the result directory ${lexical} really is ${real}, outside the allowed roots (${roots.join(", ")})`
        : `the result directory ${lexical} is outside the allowed roots (${roots.join(", ")})`,
      {
        where: lexical,
        hint: linked
          ? "a symbolic link on the way leads out of the allowed roots: put the result directory in a real folder under one of them"
          : `put the result directory under ${roots[0]} (--result-dir), or allow its folder with --allowed-root`,
      },
    );
  }
  return real;
}

/** realpath for a path that may not exist yet: the real path of its deepest existing ancestor, then the rest. */
export async function realPathOf(path: string): Promise<string> {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    try {
      return join(await realpath(current), ...rest.reverse());
    } catch {
      const parent = dirname(current);
      if (parent === current) return path;
      rest.push(basename(current));
      current = parent;
    }
  }
}
