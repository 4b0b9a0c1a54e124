import type { ExitStatus } from "../../../core/process-group.ts";
import type { FailureFacts } from "../../rules/failure-classifier.ts";
import { collectExit, isRecordRunning } from "../../launch/launched-process.ts";
import type { AttemptWatch } from "../attempt-watch.ts";
import type { AttemptEnd } from "../supervise-options.ts";
import type { SupervisionCheck } from "../supervision-check.ts";

/**
 * Swarm runs: watches the server's process group, the engine's status and every client.
 * Decides, in this order: a server that ended fails the attempt (a clean exit counts as
 * SIGTERM: nobody asked it to stop); an engine OFFLINE with "finished…" succeeds; a client
 * that exited 0 is finished (`client.finished`); a client that crashed is started again
 * alone (`client.restarted`, status.json's process list saved), not a new attempt, until
 * `max_client_restarts` is used up, which fails the attempt; every client finished succeeds.
 */
export const swarmProcessesCheck: SupervisionCheck = {
  name: "swarm processes",
  start: (watch) => {
    if (watch.options.mode === "classic") return undefined;
    const clients: ClientMemory = { restarts: new Map(), finished: new Set() };
    return async () => (await serverEnd(watch)) ?? (await clientsEnd(watch, clients));
  },
};

/** Per attempt: how often each client was restarted, and which finished their episodes. */
interface ClientMemory {
  restarts: Map<string, number>;
  finished: Set<string>;
}

/** The server's process ended (failed) or its engine finished (succeeded). */
async function serverEnd(watch: AttemptWatch): Promise<AttemptEnd | undefined> {
  const { main, merger } = watch;
  const swarm = watch.options.swarm!;
  if (!(await isRecordRunning(main))) {
    const exit = await collectExit(main, watch.options.settings.gracePeriodMs);
    await watch.stopAll();
    await watch.readMetrics({ drain: true });
    const facts: FailureFacts = {
      logTail: watch.tailOf(watch.mainLog),
      ...watch.exitFacts(exit),
      ...(exit.groupKilled ? { groupKilled: true } : {}),
      ...(exit.signal === null && exit.exitCode === 0 ? { signal: "SIGTERM" as const } : {}),
    };
    return { kind: "failed", detail: `the swarm server stopped (${exit.signal ?? exit.unknown ?? `exit ${exit.exitCode}`})`, facts, lastStep: merger.lastStep };
  }
  const engine = await swarm.status().catch(() => undefined);
  if (engine?.engine_status === "ENGINE.OFFLINE" && engine.engine_status_detail.startsWith("finished")) {
    await watch.readMetrics({ drain: true });
    await watch.stopAll();
    return { kind: "succeeded", detail: `the swarm server reports ${engine.engine_status_detail}`, lastStep: merger.lastStep };
  }
  return undefined;
}

/** Each client that ended: finished, restarted, or out of restarts (failed); then whether all finished (succeeded). */
async function clientsEnd(watch: AttemptWatch, clients: ClientMemory): Promise<AttemptEnd | undefined> {
  const { options, merger } = watch;
  for (let index = 1; index < options.processes.length; index += 1) {
    const record = options.processes[index]!;
    if (clients.finished.has(record.role) || (await isRecordRunning(record))) continue;
    const exit = await collectExit(record, options.settings.gracePeriodMs);
    if (exit.exitCode === 0) {
      clients.finished.add(record.role);
      await options.writer.appendEvent("client.finished", { attempt: options.attempt, role: record.role });
      continue;
    }
    const used = clients.restarts.get(record.role) ?? 0;
    await watch.clientLog(record).drain();
    const tail = watch.tailOf(watch.clientLog(record));
    if (used >= options.settings.maxClientRestarts) {
      await watch.stopAll();
      const facts: FailureFacts = { logTail: tail, ...watch.exitFacts(exit) };
      return {
        kind: "failed",
        detail: `swarm ${record.role} failed ${used + 1} times (${exit.signal ?? `exit ${exit.exitCode}`})`,
        facts,
        lastStep: merger.lastStep,
      };
    }
    clients.restarts.set(record.role, used + 1);
    await restartClient(watch, index, exit, used + 1);
  }
  const records = options.processes.slice(1);
  if (records.length > 0 && records.every((record) => clients.finished.has(record.role))) {
    await watch.readMetrics({ drain: true });
    await watch.stopAll();
    return { kind: "succeeded", detail: "every swarm client finished its episodes", lastStep: merger.lastStep };
  }
  return undefined;
}

/** Starts the crashed client at `index` again alone, saves the process list and reports it. */
async function restartClient(watch: AttemptWatch, index: number, exit: ExitStatus, restart: number) {
  const { options } = watch;
  const record = options.processes[index]!;
  const replacement = await options.swarm!.restartClient(record);
  options.processes[index] = replacement;
  await options.saveProcesses(options.processes);
  await options.writer.appendEvent("client.restarted", {
    attempt: options.attempt,
    role: record.role,
    exit: exit.signal ?? exit.exitCode,
    restart,
    pid: replacement.pid,
    log: replacement.logFile,
  });
  options.progress.event(
    `swarm ${record.role} ended (${exit.signal ?? `exit ${exit.exitCode}`}); restarted it alone (restart ${restart} of ${options.settings.maxClientRestarts})`,
  );
}
