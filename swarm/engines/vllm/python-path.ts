import { fileURLToPath } from "node:url";

/** swarm/python: the a3r_swarm package (reference server, trainer, tiny model) of this checkout. */
export const pythonPackageRoot = fileURLToPath(new URL("../../python", import.meta.url));

/** The environment with swarm/python first on PYTHONPATH, so `-m a3r_swarm.*` finds this checkout's package. */
export function pythonEnvironment(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const existing = base.PYTHONPATH;
  return { ...base, PYTHONPATH: existing ? `${pythonPackageRoot}:${existing}` : pythonPackageRoot, PYTHONUNBUFFERED: "1" };
}
