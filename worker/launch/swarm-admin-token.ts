import { randomBytes } from "node:crypto";
import { processEnvVariable } from "../../core/process-group.ts";

/**
 * The admin token of the swarm server a worker launches: without one, anyone who reaches
 * the port may `sync_train_config` an experiment folder of their choice or stop the engine.
 * One per run, from the system's random source, 43 characters (32 bytes, base64url). It
 * reaches the server and its clients only through the environment (`A3R_SWARM_ADMIN_TOKEN`,
 * which `a3r swarm serve` reads); it is never put on a command line (visible in `ps`) nor
 * in any file a3r writes. A worker started again reads it back from the live server's
 * environment (/proc/<pid>/environ), so restarted clients still hold it.
 */
export const swarmAdminTokenVariable = "A3R_SWARM_ADMIN_TOKEN";

export function newSwarmAdminToken(): string {
  return randomBytes(32).toString("base64url");
}

/** The token a live server was started with, or undefined (gone, or no /proc). */
export function swarmAdminTokenOf(serverPid: number): string | undefined {
  return processEnvVariable(serverPid, swarmAdminTokenVariable);
}
