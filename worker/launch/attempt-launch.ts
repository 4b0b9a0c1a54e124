import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify as stringifyYaml } from "yaml";
import type { z } from "zod";
import {
  applyOverrides,
  checkCommand,
  defaultCommandRules,
  readConfigFile,
  type Blueprint,
  type CommandRule,
  type ConfigObject,
} from "../../blueprints/index.ts";
import { A3rError } from "../../core/errors.ts";
import { writeFileAtomic } from "../../core/atomic-file.ts";
import { SwarmClient } from "../../swarm/client/index.ts";
import { envPassthroughOf, outputDirOf, planAttempt, processEnv, type AttemptPlan, type AttemptPlanInput } from "./attempt-plan.ts";
import { collectExit, isRecordRunning, launchRecorded, type LaunchedProcessRecord } from "./launched-process.ts";
import { swarmAdminTokenVariable } from "./swarm-admin-token.ts";
import type { Overrides } from "../../blueprints/index.ts";
import { createServer } from "node:net";
import { shellQuote } from "../../core/shell-quote.ts";
import { groupNetworkNamespace } from "../../core/sandbox/network-namespace.ts";
import { confineWords, relayScript, wantsHostNetwork, type SandboxDecision } from "./sandbox-plan.ts";

/**
 * Starts one attempt: writes the config copy, launches the classic command, or the swarm
 * server (waiting for its "ready" line) and then its clients, each in its own process
 * group with its own log. Returns the records to put in status.json.
 *
 * Left out: deciding what to run (attempt-plan.ts) and watching it (supervise-attempt.ts).
 */
export const a3rBin = fileURLToPath(new URL("../../bin/a3r.js", import.meta.url));

/**
 * Writes the config copy of an attempt; swarm copies get their experiment folder in the
 * result dir. `schema` is the engine's config schema where the caller knows it, so an
 * override lands on the field the leader's audit and `blueprint validate` checked.
 */
export async function writeConfigCopy(
  blueprint: Blueprint,
  resultDir: string,
  copyPath: string,
  overrides: Overrides,
  schema?: z.ZodType,
): Promise<ConfigObject> {
  const base = await readConfigFile(blueprint.config!);
  const merged = applyOverrides(base, overrides, schema);
  if (blueprint.mode === "swarm") {
    // Checkpoints must survive in the result directory so a restarted server can resume.
    merged.experiment_dir = join(resultDir, "swarm");
    delete merged.port;
  }
  await mkdir(dirname(copyPath), { recursive: true });
  await writeFileAtomic(copyPath, copyPath.endsWith(".json") ? `${JSON.stringify(merged, null, 2)}\n` : stringifyYaml(merged));
  return merged;
}

/** A swarm run's server as the supervision sees it: its status, its metrics, and client restarts. */
export interface SwarmHooks {
  url: string;
  status(): Promise<{ engine_status: string; engine_status_detail: string; global_step: number }>;
  metrics(): Promise<Array<Record<string, number>>>;
  /** Starts a crashed client again (same command, next log file). */
  restartClient(record: LaunchedProcessRecord): Promise<LaunchedProcessRecord>;
}

export interface LaunchedAttempt {
  plan: AttemptPlan;
  processes: LaunchedProcessRecord[];
  swarm?: SwarmHooks;
}

export type LaunchFailure = { failed: true; processes: LaunchedProcessRecord[]; logFile: string; reason: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The swarm client for a server URL, short timeouts: the supervisor must not hang on it. */
export function swarmClientFor(url: string, adminToken?: string): SwarmClient {
  return new SwarmClient({ url, retryForMs: 0, requestTimeoutMs: 3000, ...(adminToken ? { adminToken } : {}) });
}

export function swarmHooks(url: string, relaunch: (record: LaunchedProcessRecord) => Promise<LaunchedProcessRecord>, adminToken?: string): SwarmHooks {
  const client = swarmClientFor(url, adminToken);
  return {
    url,
    status: () => client.status(),
    metrics: () => client.metrics(),
    restartClient: relaunch,
  };
}

/** Next free log name for a restarted client: attempt-2-client-1.log, attempt-2-client-1.r1.log ... */
async function clientLogName(logs: string, attempt: number, index: number): Promise<string> {
  const base = `attempt-${attempt}-client-${index}`;
  const names = new Set(await readdir(logs).catch(() => [] as string[]));
  if (!names.has(`${base}.log`)) return join(logs, `${base}.log`);
  for (let restart = 1; ; restart += 1) if (!names.has(`${base}.r${restart}.log`)) return join(logs, `${base}.r${restart}.log`);
}

/** `confine`: the sandbox's words for a client, asked at each relaunch (the server's namespace is read from /proc then). */
export function clientRelauncher(attempt: number, logs: string, cwd: string, env: NodeJS.ProcessEnv, confine?: () => readonly string[] | undefined) {
  return async (record: Pick<LaunchedProcessRecord, "role" | "command">): Promise<LaunchedProcessRecord> => {
    const index = Number(/client-(\d+)/.exec(record.role)?.[1] ?? 1);
    const logFile = await clientLogName(logs, attempt, index);
    const words = confine?.();
    return launchRecorded({
      role: record.role,
      command: record.command,
      cwd,
      env: { ...env, A3R_CLIENT_INDEX: String(index) },
      logFile,
      exitFile: logFile.replace(/\.log$/, ".exit"),
      ...(words ? { confine: words } : {}),
    });
  };
}

export async function launchAttempt(
  input: Omit<AttemptPlanInput, "a3rBin" | "nodeExecutable" | "swarmUrl">,
  options: {
    baseEnv: NodeJS.ProcessEnv;
    readyTimeoutMs: number;
    graceMs: number;
    onProcesses: (records: LaunchedProcessRecord[]) => Promise<void>;
    /** swarm: the run's admin token, given to the server and its clients through the environment only. */
    swarmAdminToken?: string;
    /** The engine's config schema, where known: where override keys land in the config copy. */
    configSchema?: z.ZodType;
    /** The command policy the final command lines are held to (the blueprint's and the campaign's rules). */
    commandRules?: readonly CommandRule[];
    /** The run's sandbox (sandbox-plan.ts); absent or `none`: unconfined. */
    sandbox?: SandboxDecision;
  },
): Promise<LaunchedAttempt | LaunchFailure> {
  const { blueprint, resultDir, attempt } = input;
  const logs = join(resultDir, "logs");
  await mkdir(logs, { recursive: true });
  await mkdir(outputDirOf(resultDir), { recursive: true });
  if (input.configCopy) await writeConfigCopy(blueprint, resultDir, input.configCopy, input.overrides, options.configSchema);
  const planInput = { ...input, a3rBin, nodeExecutable: process.execPath };
  const logFile = join(logs, `attempt-${attempt}.log`);
  const exitFile = join(logs, `attempt-${attempt}.exit`);
  // An exit file of this attempt already there is a stray's (a worker killed between
  // starting this attempt and recording it, whose process was stopped since): it would
  // make the new group look ended at once.
  for (const name of await readdir(logs).catch(() => [] as string[]))
    if (name.startsWith(`attempt-${attempt}.`) || name.startsWith(`attempt-${attempt}-`))
      if (name.endsWith(".exit")) await rm(join(logs, name), { force: true });

  // The plan fills the placeholders; what it would run is judged before anything starts.
  const refusal = attemptPlanRefusal(planInput, options.commandRules);
  if (refusal) {
    await writeFile(logFile, `error [${refusal.code}] ${refusal.message}\n`);
    return { failed: true, processes: [], logFile, reason: refusal.message };
  }
  if (blueprint.mode === "classic") {
    const plan = planAttempt(planInput);
    const env = processEnv(options.baseEnv, plan, blueprint.venv, envPassthroughOf(blueprint));
    const confine = confineWords(options.sandbox, { blueprint, resultDir, env }, { kind: "main" }, plan.cwd);
    const main = await launchRecorded({ role: "main", command: plan.commands[0]!, cwd: plan.cwd, env, logFile, exitFile, ...(confine ? { confine } : {}) });
    await options.onProcesses([main]);
    return { plan, processes: [main] };
  }
  return launchSwarm(planInput, options, { logs, logFile, exitFile });
}

/** The swarm server (waiting for its ready line), then its clients; sandboxed, all in one loopback-only namespace. */
async function launchSwarm(
  planInput: Omit<AttemptPlanInput, "swarmUrl">,
  options: Parameters<typeof launchAttempt>[1],
  files: { logs: string; logFile: string; exitFile: string },
): Promise<LaunchedAttempt | LaunchFailure> {
  const { blueprint, resultDir, attempt } = planInput;
  const { logs, logFile, exitFile } = files;

  const serverPlan = planAttempt(planInput);
  const withToken = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
    options.swarmAdminToken ? { ...env, [swarmAdminTokenVariable]: options.swarmAdminToken } : env;
  const serverEnv = withToken(processEnv(options.baseEnv, serverPlan, blueprint.venv, envPassthroughOf(blueprint)));
  const confine = confineWords(options.sandbox, { blueprint, resultDir, env: serverEnv }, { kind: "server" }, serverPlan.cwd);
  // Sandboxed without the host's network, the server's loopback is its own: the worker
  // reaches it through a relay inside, on a socket opened here (core/sandbox/port-relay.mjs).
  const door = confine && !wantsHostNetwork(blueprint) ? await openDoor() : undefined;
  const serverCommand = door
    ? `${shellQuote(process.execPath)} ${shellQuote(relayScript)} 3 ${shellQuote(logFile)} ${shellQuote(readyLine.source)} & ${serverPlan.serverCommand!}`
    : serverPlan.serverCommand!;
  const server = await launchRecorded({
    role: "server",
    command: serverCommand,
    cwd: serverPlan.cwd,
    env: serverEnv,
    logFile,
    exitFile,
    ...(confine ? { confine } : {}),
    ...(door ? { inheritFds: [door.fd] } : {}),
  }).finally(() => door?.close());
  await options.onProcesses([server]);
  const url = await waitForReady(server, options.readyTimeoutMs);
  if (typeof url !== "string") {
    await collectExit(server, options.graceMs);
    return { failed: true, processes: [server], logFile, reason: url.reason };
  }
  const plan = planAttempt({ ...planInput, swarmUrl: url });
  const env = withToken(processEnv(options.baseEnv, plan, blueprint.venv, envPassthroughOf(blueprint)));
  const relaunch = clientRelauncher(attempt, logs, plan.cwd, env, swarmClientConfine(options.sandbox, { blueprint, resultDir, env }, server, plan.cwd));
  const processes: LaunchedProcessRecord[] = [server];
  for (const index of plan.commands.keys()) processes.push(await relaunch({ role: `client-${index + 1}`, command: plan.commands[index]! }));
  await options.onProcesses(processes);
  return { plan, processes, swarm: swarmHooks(door?.url ?? url, relaunch, options.swarmAdminToken) };
}

/**
 * The sandbox's words for a swarm client, asked at each (re)launch: it joins the
 * namespace of its server's group, read from /proc then (a restarted worker finds it too).
 */
export function swarmClientConfine(
  sandbox: SandboxDecision | undefined,
  input: Parameters<typeof confineWords>[1],
  server: LaunchedProcessRecord | undefined,
  cwd: string,
): () => readonly string[] | undefined {
  return () => {
    if (sandbox?.mode !== "bwrap") return undefined;
    const serverNamespace = server ? groupNetworkNamespace(server.pgid) : undefined;
    if (!serverNamespace && !wantsHostNetwork(input.blueprint))
      throw new A3rError(
        "LAUNCH_FAILED",
        "the sandboxed swarm server's network namespace is gone (no process of its group is left): its clients cannot join it",
      );
    return confineWords(sandbox, input, { kind: "client", serverNamespace: serverNamespace ?? "" }, cwd);
  };
}

/** A listening socket on the host's loopback, for the relay inside a sandbox to inherit as fd 3. */
async function openDoor(): Promise<{ fd: number; url: string; close(): void }> {
  const server = createServer();
  await new Promise<void>((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolveListen());
  });
  const address = server.address();
  const fd = (server as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof address !== "object" || !address || typeof fd !== "number" || fd < 0) {
    server.close();
    throw new A3rError("LAUNCH_FAILED", "could not open the loopback socket the sandboxed swarm server's relay needs");
  }
  // The child keeps its own copy of the descriptor: closing ours leaves it listening.
  return { fd, url: `http://127.0.0.1:${address.port}`, close: () => server.close() };
}

/**
 * Why an attempt must not start, or undefined: its plan cannot be made (a placeholder's
 * value is not of its type) or a final command line is refused by the command policy. The
 * blueprint was audited with its placeholders; what they became (values a diagnosis may
 * have set) is judged here, before any process starts. Pure.
 */
export function attemptPlanRefusal(input: Omit<AttemptPlanInput, "swarmUrl">, rules: readonly CommandRule[] | undefined): A3rError | undefined {
  try {
    // A stand-in URL: the real one is known only once the server is up, and is quoted like every value.
    const plan = planAttempt({ ...input, swarmUrl: "http://127.0.0.1:1" });
    forbidCommands(plan, rules);
    return undefined;
  } catch (error) {
    if (error instanceof A3rError) return error;
    throw error;
  }
}

function forbidCommands(plan: AttemptPlan, rules: readonly CommandRule[] | undefined): void {
  for (const line of plan.commands) {
    const forbidden = checkCommand(line, rules ?? defaultCommandRules).filter((violation) => violation.severity === "error");
    if (forbidden.length > 0) {
      const why = forbidden.map((violation) => `${violation.ruleId} (${violation.reason}): ${violation.match}`).join("; ");
      throw new A3rError("COMMAND_FORBIDDEN", `the attempt's command, with its placeholders filled, is refused by the command policy: ${why}`, {
        where: "command",
        hint: "fix the blueprint's command or the override that filled its placeholder",
      });
    }
  }
}

const readyLine = /swarm server ready on (https?:\/\/\S+)/;

/** The server's URL once it prints its ready line, or why it never did. */
export async function waitForReady(server: LaunchedProcessRecord, timeoutMs: number): Promise<string | { reason: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await readFile(server.logFile, "utf8").catch(() => "");
    const match = readyLine.exec(text);
    if (match) return match[1]!;
    if (!(await isRecordRunning(server))) return { reason: "the swarm server exited before it was ready" };
    if (Date.now() > deadline) return { reason: `the swarm server was not ready within ${Math.round(timeoutMs / 1000)} s` };
    await sleep(100);
  }
}

/** The URL a live server printed (re-attach). */
export async function readyUrlOf(server: LaunchedProcessRecord): Promise<string | undefined> {
  const text = await readFile(server.logFile, "utf8").catch(() => "");
  return readyLine.exec(text)?.[1];
}

/** The step of the swarm server's newest checkpoint, or null. */
export async function latestSwarmCheckpointStep(resultDir: string): Promise<number | null> {
  try {
    const latest = JSON.parse(await readFile(join(resultDir, "swarm", "checkpoints", "latest.json"), "utf8")) as { step?: unknown };
    return typeof latest.step === "number" ? latest.step : null;
  } catch {
    return null;
  }
}
