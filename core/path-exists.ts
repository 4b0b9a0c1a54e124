import { access } from "node:fs/promises";

/** True when something exists at `path` (any kind, readable or not). */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
