/**
 * Fault injection for the worker's own crash tests: with `A3R_WORKER_CRASH_AT=<point>` in
 * the worker's environment, the worker SIGKILLs itself at that point, as a host crash would.
 * The points are the instants a file watcher cannot hit reliably: `after-spawn` (the trainer's
 * process group started, status.json not yet written). Never set outside tests.
 */
export type CrashPoint = "after-spawn";

export function crashPoint(point: CrashPoint): void {
  if (process.env.A3R_WORKER_CRASH_AT === point) process.kill(process.pid, "SIGKILL");
}
