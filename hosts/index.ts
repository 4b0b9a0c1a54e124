/**
 * How work reaches machines (hosts/README.md): hosts.yaml, the pure scheduler, the launcher port
 * with its host kinds (local, ssh, queue, slurm and ray; plug-ins listed in kinds/registry.ts), the
 * worker daemon of the queue backend, and the dispatcher used by `a3r dispatch` (and by the
 * leader's dispatch node).
 */
export type { FetchOutcome, LaunchOutcome, LaunchRequest, Launcher, LlmAllowance, ProgressState, RunProgress, RunRef } from "./port/launcher.ts";
export { bundleFiles, liveFiles, parseRunKey, runKey } from "./port/launcher.ts";
export type { Assignment, HostCapacity, HostLoad, SchedulingRequest, SchedulingResult } from "./port/scheduler.ts";
export { scheduleBlueprints } from "./port/scheduler.ts";
export type {
  HostConfig,
  HostEntry,
  HostsFile,
  LoadedHost,
  LoadHostsOptions,
  LocalHostConfig,
  QueueHostConfig,
  SlurmHostConfig,
  SshHostConfig,
} from "./kinds/hosts-config.ts";
export { defaultA3rCommand, findHost, loadHostsFile, parseHostsText } from "./kinds/hosts-config.ts";
export type { EntryProblem, HostKind, ResolveContext } from "./port/host-kind.ts";
export { defineHostKind } from "./port/host-kind.ts";
export { hostKindOf, hostKinds, registerHostKind } from "./kinds/registry.ts";
export type { SshAliasSettings } from "./ssh/ssh-config.ts";
export { resolveSshAlias } from "./ssh/ssh-config.ts";
export { openLauncher, sshConnectionFor } from "./kinds/open-launcher.ts";
export type { OpenLauncherOptions } from "./kinds/open-launcher.ts";
export { LocalLauncher } from "./local/local-launcher.ts";
export type { LocalLauncherOptions } from "./local/local-launcher.ts";
export type { SshLauncherOptions } from "./ssh/ssh-launcher.ts";
export type { ExecOptions, ExecResult, SshConnectionOptions } from "./ssh/ssh-connection.ts";
export type { QueueLauncherOptions } from "./queue/queue-launcher.ts";
export type { SlurmLauncherOptions } from "./slurm/slurm-launcher.ts";
export type { WorkerDaemonOptions } from "./queue/worker-daemon.ts";
export { resolveCapacity } from "./dispatch/host-capacity.ts";
export { checkHost } from "./check/host-check.ts";
export type { CheckHostOptions, HostCheck } from "./check/host-check.ts";
export { defaultResultDir, dispatchBlueprints, gpusOf, isDone } from "./dispatch/dispatcher.ts";
export type { DispatchHost, DispatchItem, DispatchOptions, DispatchRow, DispatchState } from "./dispatch/dispatcher.ts";
export { sshFingerprint, verifyHostKey } from "./ssh/host-key.ts";
export { describeProgress } from "./port/run-progress.ts";
export { closeDispatchHosts, openDispatchHosts } from "./dispatch/open-dispatch-hosts.ts";

// The ssh, queue and slurm launchers (ssh2, BullMQ) load when a host of their kind is opened
// (their kind's openLauncher); the worker daemon loads with its command.
export async function loadWorkerDaemon(): Promise<typeof import("./queue/worker-daemon.ts").WorkerDaemon> {
  return (await import("./queue/worker-daemon.ts")).WorkerDaemon;
}
