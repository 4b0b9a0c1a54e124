import { access, constants } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { isProgramName } from "../../blueprints/index.ts";
import { pathExists } from "../../core/path-exists.ts";

/**
 * A blueprint's Virtual Environment is a folder or interpreter file, or (so that examples
 * name no machine's paths) a program name such as `node`, found on the worker's PATH.
 */
export async function interpreterFound(venv: string, searchPath: string | undefined): Promise<boolean> {
  if (!isProgramName(venv)) return pathExists(venv);
  for (const folder of (searchPath ?? "").split(delimiter)) {
    if (folder === "") continue;
    const ok = await access(join(folder, venv), constants.X_OK).then(
      () => true,
      () => false,
    );
    if (ok) return true;
  }
  return false;
}
