import { realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { HttpError } from "./wire/http-tools.ts";

/**
 * Paths a client may name over HTTP (sync_train_config's experiment_dir, a checkpoint to
 * resume from) stay under the server's allowed roots: the directory it was started in, the
 * experiment directory its own configuration chose, and any root the operator added. On a
 * token-less server anyone local may call those endpoints, and without this a client could
 * make the server write its experiment into ~/.ssh or load weights from anywhere.
 *
 * Symbolic links are resolved on the part of the path that exists, so a link under a root
 * that points outside it does not pass.
 */
export class PathConfinement {
  readonly roots: readonly string[];

  constructor(roots: readonly string[]) {
    this.roots = [...new Set(roots.map((root) => realPrefix(resolve(root))))];
  }

  /** The path made absolute, or a 400 naming `field`, the path and the roots. */
  check(field: string, path: string): string {
    const absolute = resolve(path);
    const real = realPrefix(absolute);
    if (this.roots.some((root) => inside(real, root))) return absolute;
    throw new HttpError(
      400,
      `${field}: ${path} is outside the server's allowed roots (${this.roots.join(", ")}); choose a path under one of them, or start the server from a directory that contains it`,
    );
  }
}

function inside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The real path of the longest existing prefix, with the rest appended unchanged. */
function realPrefix(path: string): string {
  let existing = path;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = realpathSync(existing);
      return rest.length === 0 ? real : resolve(real, ...rest.reverse());
    } catch {
      const parent = dirname(existing);
      if (parent === existing) return path;
      rest.push(existing.slice(parent.length).replace(/^[/\\]+/, ""));
      existing = parent;
    }
  }
}
