import { dirname, resolve } from "node:path";
import { anonymousFile } from "./blueprint.ts";

/**
 * Paths in a blueprint or a topic may be written relative to the file that names them, so
 * that an example works wherever its clone lies: `./` or `../` marks such a path. Any other
 * relative path stays an error (a worker runs in its own folder, so a bare `data/x` would
 * point somewhere nobody meant).
 */
export function isFileRelative(path: string): boolean {
  return path === "." || path === ".." || path.startsWith("./") || path.startsWith("../");
}

/** The path resolved against the folder of `file`; unchanged when it is not file-relative or there is no file. */
export function besideFile(path: string, file: string | undefined): string {
  if (!isFileRelative(path) || file === undefined || file === anonymousFile) return path;
  return resolve(dirname(resolve(file)), path);
}

/**
 * An interpreter named without a folder (`node`, `python3`) is looked up on the worker's
 * PATH when the run starts: the one program name a blueprint may give instead of a path.
 */
export function isProgramName(path: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/.test(path) && !isFileRelative(path);
}
