/**
 * How work reaches machines (DESIGN §6): hosts.yaml, the pure scheduler, the launcher port
 * with its local, ssh and queue implementations, the worker daemon of the queue backend,
 * and the dispatcher used by `a3r dispatch` (and by the leader's dispatch node).
 */
export type { FetchOutcome, LaunchOutcome, LaunchRequest, Launcher, LlmAllowance, ProgressState, RunProgress, RunRef } from "./launcher.ts";
export { bundleFiles, liveFiles, parseRunKey, runKey } from "./launcher.ts";
export type { Assignment, HostCapacity, HostLoad, SchedulingRequest, SchedulingResult } from "./scheduler.ts";
export { scheduleBlueprints } from "./scheduler.ts";
export type { HostConfig, HostsFile, LoadHostsOptions, LocalHostConfig, QueueHostConfig, SshHostConfig } from "./hosts-config.ts";
export { defaultA3rCommand, findHost, loadHostsFile, parseHostsText } from "./hosts-config.ts";
export type { SshAliasSettings } from "./ssh-config.ts";
export { resolveSshAlias } from "./ssh-config.ts";
export { openLauncher, sshConnectionFor } from "./open-launcher.ts";
export type { OpenLauncherOptions } from "./open-launcher.ts";
export { LocalLauncher } from "./local-launcher.ts";
export type { LocalLauncherOptions } from "./local-launcher.ts";
export { SshLauncher } from "./ssh-launcher.ts";
export type { SshLauncherOptions } from "./ssh-launcher.ts";
export { SshConnection } from "./ssh-connection.ts";
export type { ExecOptions, ExecResult, SshConnectionOptions } from "./ssh-connection.ts";
export { QueueLauncher } from "./queue-launcher.ts";
export type { QueueLauncherOptions } from "./queue-launcher.ts";
export { WorkerDaemon } from "./worker-daemon.ts";
export type { WorkerDaemonOptions } from "./worker-daemon.ts";
export { registerWorkerDaemonCommand } from "./worker-daemon-command.ts";
export { resolveCapacity } from "./host-capacity.ts";
export { checkHost } from "./host-check.ts";
export type { HostCheck } from "./host-check.ts";
export { defaultResultDir, dispatchBlueprints, gpusOf, isDone } from "./dispatcher.ts";
export type { DispatchHost, DispatchItem, DispatchOptions, DispatchRow, DispatchState } from "./dispatcher.ts";
export { sshFingerprint, verifyHostKey } from "./host-key.ts";
export { describeProgress } from "./run-progress.ts";
