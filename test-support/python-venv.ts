import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

/**
 * The Python with transformers, PEFT, TRL and Ray: `.venv` at the repository root, built
 * from a local wheelhouse by `swarm/python/make-venv.sh` (CI runs it; nothing is ever
 * downloaded), or the interpreter A3R_VENV_PYTHON names. Tests that need one of those
 * packages ask here and, where it is missing, skip with the reason this gives.
 */
export const venvPython = process.env.A3R_VENV_PYTHON ?? join(import.meta.dirname, "..", ".venv", "bin", "python");

const checked = new Map<string, string | undefined>();

/** Why `modules` cannot be imported by the venv's Python, or undefined when they can. */
export function venvMissing(modules: readonly string[]): string | undefined {
  const key = modules.join(",");
  if (checked.has(key)) return checked.get(key);
  let reason: string | undefined;
  if (!existsSync(venvPython)) {
    reason = `no ${venvPython}: run swarm/python/make-venv.sh (needs a wheelhouse with torch and peft)`;
  } else {
    const probe = spawnSync(venvPython, ["-c", `import ${key}`], { encoding: "utf8", timeout: 120_000 });
    if (probe.status !== 0) reason = `${venvPython} cannot import ${key}: run swarm/python/make-venv.sh`;
  }
  checked.set(key, reason);
  return reason;
}
