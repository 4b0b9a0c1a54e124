import { importUserModule } from "../core/typescript-import.ts";
import { InvalidArgumentError, type Command } from "commander";
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { A3rError } from "../core/errors.ts";
import { createLogger } from "../core/logger.ts";
import { loadSwarmConfig, SwarmConfigError, type AgentJetMapping } from "../swarm/index.ts";
import { isLoopbackHost, minimumAdminTokenLength, startSwarmServer } from "../swarm/index.ts";
import { tokenWeakness } from "../core/token-strength.ts";
import { runEpisodes, SwarmClient, SwarmRequestError, type EpisodeTask, type RunProgress } from "../swarm/index.ts";
import { isMultiRoleTask, runMultiEpisodes, type MultiRoleTask } from "../swarm/index.ts";
import { parse as parseYaml } from "yaml";
import { progressBar, renderStatus } from "./views/swarm-status-view.ts";
import { exitCode } from "./exit-codes.ts";

const defaultUrl = (): string => process.env.A3R_SWARM_URL ?? "http://127.0.0.1:10086";
const tasksDirectory = fileURLToPath(new URL("../examples/tasks/", import.meta.url));

function integerOption(name: string, min: number, max: number) {
  return (value: string): number => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isInteger(number) || number < min || number > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}.`);
    }
    return number;
  };
}

function urlOption(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("protocol");
    return value;
  } catch {
    throw new InvalidArgumentError("--url must be an http(s) URL such as http://127.0.0.1:10086.");
  }
}

/** One `--url`: a plain URL, or `role=URL` for a multi-model task. */
interface ServerUrl {
  role?: string;
  url: string;
}

function collectUrl(value: string, previous: ServerUrl[]): ServerUrl[] {
  const named = /^([A-Za-z][A-Za-z0-9_-]*)=(.+)$/.exec(value);
  if (!named) return [...previous, { url: urlOption(value) }];
  try {
    return [...previous, { role: named[1]!, url: urlOption(named[2]!) }];
  } catch {
    throw new InvalidArgumentError(`--url ${named[1]}=… must name an http(s) URL such as ${named[1]}=http://127.0.0.1:10091.`);
  }
}

function durationSeconds(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s)?$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError("--interval must be like 2s or 500ms.");
  return Number(match[1]) * (match[2] === "ms" ? 0.001 : 1);
}

export function registerSwarmCommands(program: Command): void {
  const swarm = program.command("swarm").description("serve, watch and drive swarm training runs");

  swarm
    .command("serve")
    .description("run a swarm server: the trainable policy behind an OpenAI-compatible API")
    .requiredOption("--config <file>", "swarm.yaml")
    .option("--port <n>", "port (0 picks a free one; overrides the config)", integerOption("--port", 0, 65535))
    .option("--host <address>", "address to listen on (overrides the config)")
    .option("--admin-token <token>", "token required on control endpoints (visible in ps: prefer A3R_SWARM_ADMIN_TOKEN or --admin-token-file)")
    .option("--admin-token-file <file>", "read the admin token from this file (first line)")
    .option("--resume", "resume from the latest checkpoint in experiment_dir when there is one")
    .option("--no-start", "wait for start_engine instead of starting the engine at once")
    .option("--exit-when-finished", "exit (code 0) a few seconds after max_steps is reached, once clients have seen it")
    .action(async (options: ServeOptions) => {
      await serve(options);
    });

  swarm
    .command("check")
    .description(
      "validate a swarm.yaml, or an AgentJet job's YAML (ajet:), as serve would load it; prints the field and bound that fail, and for AgentJet's form what each key became",
    )
    .requiredOption("--config <file>", "swarm.yaml")
    .action(async (options: { config: string }) => {
      let report: string[] | undefined;
      await loadConfigOrExplain(options.config, (mapping) => {
        report = agentJetReport(mapping);
      });
      process.stdout.write(`${options.config}: ok${report ? " (AgentJet's form)" : ""}\n${report ? report.map((line) => `  ${line}\n`).join("") : ""}`);
    });

  swarm
    .command("status")
    .description("show the engine state, pool progress, running episodes and reward curve")
    .option("--url <url>", "swarm server URL (or A3R_SWARM_URL)", urlOption)
    .option("--watch", "refresh until interrupted")
    .option("--interval <duration>", "refresh interval with --watch", durationSeconds, 2)
    .option("--json", "print JSON instead of a table")
    .action(async (options: { url?: string; watch?: boolean; interval: number; json?: boolean }) => {
      await status(options);
    });

  swarm
    .command("client")
    .description("run episodes of a task against a swarm server, or of a multi-model task against one server per role")
    .argument("<task>", "a task name under examples/tasks, or the path of a task.ts")
    .option(
      "--url <url>",
      "swarm server URL (or A3R_SWARM_URL); a multi-model task takes one per role, as role=URL (repeat the flag)",
      collectUrl,
      [] as ServerUrl[],
    )
    .option("--swarm <file>", "a YAML file mapping each role of a multi-model task to its server URL (instead of --url role=URL)")
    .option("--episodes <n>", "episodes to run", integerOption("--episodes", 1, 10_000_000), 64)
    .option("--concurrency <k>", "episodes at once", integerOption("--concurrency", 1, 1024), 8)
    .option("--seed <n>", "seed of the first task", integerOption("--seed", 0, 2 ** 31))
    .option("--eval", "claim eval episodes (answered, never trained on)")
    .option(
      "--discard-timeout <seconds>",
      "the server reclaims an episode of this client after this much silence (a crashed client's episodes stop holding up the batch)",
      integerOption("--discard-timeout", 1, 86_400),
      600,
    )
    .option("--json", "print the summary as JSON")
    .action(async (taskArgument: string, options: ClientOptions) => {
      await client(taskArgument, options);
    });
}

interface ServeOptions {
  config: string;
  port?: number;
  host?: string;
  adminToken?: string;
  adminTokenFile?: string;
  resume?: boolean;
  start: boolean;
  exitWhenFinished?: boolean;
}

/** Clients back off for at most 2 s between claims: this lets them all see "finished". */
const finishedGraceMs = 5000;
/** After a failed step: longer than the SDK's largest backoff (2 s), so every client reads the failure. */
const failedGraceMs = 3000;

async function adminTokenFrom(options: ServeOptions): Promise<string | undefined> {
  if (options.adminTokenFile === undefined) return options.adminToken === "" ? undefined : options.adminToken;
  const text = await readFile(options.adminTokenFile, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new A3rError("FILE_NOT_FOUND", `cannot read the admin token file: ${error.code ?? error.message}`, {
      where: options.adminTokenFile,
      hint: "give a file whose first line is the token",
    });
  });
  const token = text.split("\n")[0]!.trim();
  if (token === "") throw new A3rError("USAGE", "the admin token file is empty", { where: options.adminTokenFile, hint: "write the token on its first line" });
  return token;
}

/** What an AgentJet-form file became, one line per key: what took effect and what did not, and why. */
function agentJetReport(mapping: AgentJetMapping): string[] {
  return [
    ...mapping.mapped.map((line) => `mapped: ${line}`),
    ...mapping.ignored.map((line) => `ignored: ${line}`),
    ...(mapping.ignoredNotListed > 0 ? [`ignored: ${mapping.ignoredNotListed} more keys not listed`] : []),
  ];
}

/**
 * The config as serve loads it, or CONFIG_INVALID naming the file, line, field and bound.
 * An AgentJet YAML (top-level `ajet:`) is translated (swarm/config/agentjet.ts) and what it
 * became goes to `onAgentJet`.
 */
async function loadConfigOrExplain(path: string, onAgentJet?: (mapping: AgentJetMapping) => void) {
  try {
    return await loadSwarmConfig(path, onAgentJet ? { onAgentJet } : {});
  } catch (error) {
    if (error instanceof SwarmConfigError)
      throw new A3rError("CONFIG_INVALID", error.message, { where: error.where, ...(error.hint ? { hint: error.hint } : {}) });
    throw error;
  }
}

async function serve(options: ServeOptions): Promise<void> {
  // An AgentJet job's YAML: say on stderr what each key became (the same lines as swarm check).
  let config = await loadConfigOrExplain(options.config, (mapping) => {
    for (const line of agentJetReport(mapping)) process.stderr.write(`agentjet: ${line}\n`);
  });
  if (options.port !== undefined) config = { ...config, port: options.port };
  if (options.host !== undefined) config = { ...config, host: options.host };
  // An empty A3R_SWARM_ADMIN_TOKEN counts as unset, like an empty --admin-token.
  const adminToken = (await adminTokenFrom(options)) ?? (process.env.A3R_SWARM_ADMIN_TOKEN || undefined) ?? config.admin_token;
  if (!isLoopbackHost(config.host) && (adminToken === undefined || adminToken.length < minimumAdminTokenLength)) {
    throw new A3rError("USAGE", `listening on ${config.host} (beyond this machine) needs an admin token of at least ${minimumAdminTokenLength} characters`, {
      where: options.host !== undefined ? "--host" : "host",
      hint: "set A3R_SWARM_ADMIN_TOKEN (e.g. $(openssl rand -hex 24)) or --admin-token-file, or listen on 127.0.0.1",
    });
  }
  // Length is not strength: 24 spaces pass it. A token that guards a port others reach must be random.
  const weakness = adminToken === undefined || isLoopbackHost(config.host) ? undefined : tokenWeakness(adminToken);
  if (weakness !== undefined) {
    throw new A3rError("USAGE", `the admin token is too easy to guess for listening on ${config.host}: ${weakness}`, {
      where: "admin token",
      hint: "use a random one: A3R_SWARM_ADMIN_TOKEN=$(openssl rand -hex 24)",
    });
  }
  let server;
  try {
    server = await startSwarmServer({
      config,
      ...(adminToken ? { adminToken } : {}),
      autoStart: options.start,
      resume: options.resume === true,
      logger: createLogger("swarm"),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE")
      throw new A3rError("USAGE", `port ${config.port} is in use`, { where: "--port", hint: "pick another port with --port, or --port 0 for a free one" });
    throw error;
  }
  process.stdout.write(`swarm server ready on ${server.url}\n`);
  let bootFailure: string | undefined;
  let failedStep: string | undefined;
  await new Promise<void>((resolveStopped) => {
    let stopping = false;
    const shutdown = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`${signal}: stopping the engine (checkpoint) and the server\n`);
      void server.close().then(resolveStopped, (error: unknown) => {
        process.stderr.write(`shutdown failed: ${String(error)}\n`);
        resolveStopped();
      });
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
    if (options.start) {
      // A server whose engine cannot boot must not sit OFFLINE looking like a hang: it exits
      // with the reason (a configuration error names the field and its bound).
      void server.coordinator.idle().then(() => {
        const failure = server.coordinator.failure;
        if (failure?.stage !== "boot") return;
        bootFailure = failure.error;
        shutdown("the engine failed to boot");
      });
      // A failed training step leaves nothing to serve: after a grace in which clients read
      // the failure (their SDK stops with SwarmEngineFailedError), the server exits 1. With
      // --no-start a client drives the engine (AgentJet's flow) and may start it again.
      server.coordinator.state.onTransition((record) => {
        const stage = server.coordinator.failure?.stage;
        if (record.to === "ENGINE.OFFLINE" && (stage === "train" || stage === "checkpoint")) {
          failedStep = record.reason;
          setTimeout(() => shutdown("training step failed; exiting"), failedGraceMs).unref();
        }
      });
    }
    if (options.exitWhenFinished) {
      server.coordinator.state.onTransition((record) => {
        if (record.to === "ENGINE.OFFLINE" && record.reason.startsWith("finished")) {
          setTimeout(() => shutdown(`${record.reason}; exiting`), finishedGraceMs).unref();
        }
      });
    }
  });
  if (bootFailure !== undefined) {
    throw new A3rError("CONFIG_INVALID", `the engine failed to boot: ${bootFailure}`, {
      where: options.config,
      hint: "fix that field in the swarm config (or the blueprint override that set it) and start again",
    });
  }
  if (failedStep !== undefined) {
    process.stderr.write(`swarm server: ${failedStep.replace(/^failed: /, "")}\n`);
    process.exitCode = exitCode.failure;
  }
}

async function status(options: { url?: string; watch?: boolean; interval: number; json?: boolean }): Promise<void> {
  const url = options.url ?? defaultUrl();
  const swarmClient = new SwarmClient({ url, retryForMs: 0, requestTimeoutMs: 5000 });
  const once = async (): Promise<boolean> => {
    const engine = await swarmClient.status();
    const reachable = engine.engine_status !== "ENGINE.CANNOT_CONNECT";
    const pool = reachable ? await swarmClient.poolInformation().catch(() => undefined) : undefined;
    const metrics = reachable ? await swarmClient.metrics().catch(() => undefined) : undefined;
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ url, status: engine, pool, metrics: metrics?.slice(-20) })}\n`);
    } else {
      if (options.watch && process.stdout.isTTY) process.stdout.write("\x1b[2J\x1b[H");
      process.stdout.write(renderStatus({ url, status: engine, ...(pool ? { pool } : {}), ...(metrics ? { metrics } : {}) }));
    }
    return reachable;
  };
  if (!options.watch) {
    if (!(await once())) process.exitCode = exitCode.failure;
    return;
  }
  let stopped = false;
  process.once("SIGINT", () => {
    stopped = true;
  });
  while (!stopped) {
    await once();
    await new Promise((resolveTimer) => setTimeout(resolveTimer, options.interval * 1000));
  }
}

async function loadTask(taskArgument: string): Promise<EpisodeTask | MultiRoleTask> {
  const looksLikePath = taskArgument.includes("/") || taskArgument.endsWith(".ts") || taskArgument.endsWith(".js");
  const path = looksLikePath ? (isAbsolute(taskArgument) ? taskArgument : resolve(taskArgument)) : resolve(tasksDirectory, taskArgument, "task.ts");
  if (!existsSync(path)) {
    const names = existsSync(tasksDirectory) ? readdirSync(tasksDirectory).filter((name) => existsSync(resolve(tasksDirectory, name, "task.ts"))) : [];
    throw new A3rError("FILE_NOT_FOUND", `no task module at ${path}`, {
      where: "<task>",
      hint: `give a task name (${names.join(", ") || "none found"}) or the path of a task.ts`,
    });
  }
  const module = (await importUserModule(pathToFileURL(path).href)) as { default?: Partial<EpisodeTask> };
  const task = module.default;
  if (isMultiRoleTask(task))
    return { ...task, name: task.name ?? taskArgument, sampleTask: task.sampleTask.bind(task), runEpisode: task.runEpisode.bind(task) };
  if (!task || typeof task.sampleTask !== "function" || typeof task.runEpisode !== "function") {
    throw new A3rError("CONFIG_INVALID", `${path} does not default-export a task with sampleTask(seed) and runEpisode(openai, task)`, {
      where: path,
      hint: "see examples/tasks/task-types.ts for the SwarmTask shape (or swarm/client/run-multi-episodes.ts for a multi-model task, with roles)",
    });
  }
  return { name: task.name ?? taskArgument, sampleTask: task.sampleTask.bind(task), runEpisode: task.runEpisode.bind(task) };
}

interface ClientOptions {
  url: ServerUrl[];
  swarm?: string;
  episodes: number;
  concurrency: number;
  seed?: number;
  eval?: boolean;
  discardTimeout: number;
  json?: boolean;
}

/** The servers of a multi-model task, one per role, from `--url role=URL` or `--swarm <file>`; refuses a missing, unknown or doubled role. */
async function roleUrls(task: MultiRoleTask, options: ClientOptions): Promise<Record<string, string>> {
  const given: ServerUrl[] = [...options.url];
  if (options.swarm !== undefined) given.push(...(await swarmFileUrls(options.swarm)));
  const urls: Record<string, string> = {};
  const usage = (message: string): A3rError =>
    new A3rError("USAGE", message, {
      where: options.swarm !== undefined && options.url.length === 0 ? options.swarm : "--url",
      hint: `give one server per role: ${task.roles.map((role) => `--url ${role}=http://127.0.0.1:PORT`).join(" ")}`,
    });
  for (const entry of given) {
    if (entry.role === undefined) throw usage(`${task.name} has ${task.roles.length} roles (${task.roles.join(", ")}): name the role of ${entry.url}`);
    if (!task.roles.includes(entry.role)) throw usage(`${task.name} has no role "${entry.role}" (its roles: ${task.roles.join(", ")})`);
    if (urls[entry.role] !== undefined) throw usage(`the role "${entry.role}" is given two servers`);
    urls[entry.role] = entry.url;
  }
  const missing = task.roles.filter((role) => urls[role] === undefined);
  if (missing.length > 0) throw usage(`no server for the role${missing.length > 1 ? "s" : ""} ${missing.join(", ")} of ${task.name}`);
  return urls;
}

/** A swarm file: a YAML mapping of role to server URL. */
async function swarmFileUrls(path: string): Promise<ServerUrl[]> {
  const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new A3rError("FILE_NOT_FOUND", `cannot read the swarm file: ${error.code ?? error.message}`, {
      where: path,
      hint: "give a YAML file of role: URL lines",
    });
  });
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new A3rError("CONFIG_INVALID", `the swarm file is not YAML: ${(error as Error).message.split("\n")[0]}`, {
      where: path,
      hint: "write one role: URL line per server",
    });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new A3rError("CONFIG_INVALID", "the swarm file must map each role to its server URL", { where: path, hint: "e.g. proposer: http://127.0.0.1:10091" });
  return Object.entries(parsed as Record<string, unknown>).map(([role, url]) => {
    try {
      return { role, url: urlOption(String(url)) };
    } catch {
      throw new A3rError("CONFIG_INVALID", `the role ${role} has no http(s) URL (${JSON.stringify(url)})`, {
        where: path,
        hint: `e.g. ${role}: http://127.0.0.1:10091`,
      });
    }
  });
}

function clientError(error: unknown, where: string): unknown {
  if (error instanceof SwarmRequestError) return new A3rError("SWARM_REQUEST_REFUSED", error.message, { where });
  if (error instanceof Error && error.name === "SwarmUnreachableError")
    return new A3rError("SWARM_UNREACHABLE", error.message, { where, hint: "start it with `a3r swarm serve --config swarm.yaml` or pass --url" });
  return error;
}

async function client(taskArgument: string, options: ClientOptions): Promise<void> {
  const task = await loadTask(taskArgument);
  if (isMultiRoleTask(task)) return multiClient(task, options);
  if (options.swarm !== undefined || options.url.length > 1 || options.url[0]?.role !== undefined) {
    throw new A3rError("USAGE", `${task.name} is a single-policy task: it takes one server`, {
      where: "--url",
      hint: "give --url URL (no role name, no --swarm)",
    });
  }
  const url = options.url[0]?.url ?? defaultUrl();
  const swarmClient = new SwarmClient({ url });
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  const tty = Boolean(process.stderr.isTTY) && !options.json;
  const onProgress = (progress: RunProgress): void => {
    if (tty) {
      process.stderr.write(
        `\r${progressBar(progress.done / progress.total)} ${progress.done}/${progress.total} reward ${progress.rewardMean.toFixed(3)} failed ${progress.failed} running ${progress.running}   `,
      );
    } else if (!options.json) {
      const last = progress.last;
      process.stdout.write(`episode ${progress.done}/${progress.total} task ${last.taskId} ${last.ok ? `reward ${last.reward}` : `failed: ${last.error}`}\n`);
    }
  };
  let summary;
  const seed = options.seed ?? seedFromRun(process.env);
  try {
    summary = await runEpisodes({
      client: swarmClient,
      task,
      episodes: options.episodes,
      concurrency: options.concurrency,
      ...(seed === undefined ? {} : { seed }),
      episodeType: options.eval ? "eval" : "train",
      discardEpisodeTimeout: options.discardTimeout,
      onProgress,
      signal: controller.signal,
    });
  } catch (error) {
    throw clientError(error, url);
  }
  if (tty) process.stderr.write("\n");
  const { outcomes, ...totals } = summary;
  if (options.json)
    process.stdout.write(`${JSON.stringify({ task: task.name, url, ...totals, failures: outcomes.filter((outcome) => !outcome.ok).slice(0, 20) })}\n`);
  else
    process.stdout.write(
      `${task.name}: ${totals.completed}/${totals.requested} episodes, reward mean ${totals.rewardMean.toFixed(3)}, success ${(totals.successRate * 100).toFixed(1)}%, failed ${totals.failed}${totals.stoppedEarly ? ` (stopped early: ${totals.stoppedEarly})` : ""}\n`,
    );
  if ((totals.completed === 0 && totals.failed > 0) || totals.engineFailed !== undefined) process.exitCode = exitCode.failure;
}

/** A multi-model task: each episode one claim per role's server (runMultiEpisodes), each role rewarded on its own. */
async function multiClient(task: MultiRoleTask, options: ClientOptions): Promise<void> {
  const urls = await roleUrls(task, options);
  const clients = Object.fromEntries(Object.entries(urls).map(([role, url]) => [role, new SwarmClient({ url, backoff: { initialMs: 20, maxMs: 1000 } })]));
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  const seed = options.seed ?? seedFromRun(process.env);
  const window: Array<Record<string, number>> = [];
  let summary;
  try {
    summary = await runMultiEpisodes({
      clients,
      task,
      episodes: options.episodes,
      concurrency: options.concurrency,
      ...(seed === undefined ? {} : { seed }),
      episodeType: options.eval ? "eval" : "train",
      discardEpisodeTimeout: options.discardTimeout,
      signal: controller.signal,
      onEpisode: (done, record) => {
        if (options.json) return;
        if (record.rewards) window.push(record.rewards);
        if (done % 100 !== 0 && done !== options.episodes) return;
        const means = task.roles.map(
          (role) => `${role} ${(window.reduce((sum, rewards) => sum + (rewards[role] ?? 0), 0) / Math.max(1, window.length)).toFixed(2)}`,
        );
        process.stdout.write(`${done}/${options.episodes} episodes, last ${window.length}: reward ${means.join(", ")}\n`);
        window.length = 0;
      },
    });
  } catch (error) {
    throw clientError(error, Object.values(urls).join(", "));
  }
  if (options.json) process.stdout.write(`${JSON.stringify({ task: task.name, urls, ...summary })}\n`);
  else
    process.stdout.write(
      `${task.name}: ${summary.completed}/${summary.requested} episodes, reward mean ${task.roles.map((role) => `${role} ${summary.rewardMean[role]!.toFixed(3)}`).join(" ")}, failed ${summary.failed}${summary.stoppedEarly ? ` (stopped early: ${summary.stoppedEarly})` : ""}\n`,
    );
  if ((summary.completed === 0 && summary.failed > 0) || summary.engineFailed !== undefined) process.exitCode = exitCode.failure;
}

/**
 * The first task's seed of a client a worker started: from the run's seed and the client's
 * index (A3R_SEED, A3R_CLIENT_INDEX), so seeds vary the task stream too (two seeds of a
 * configuration see different tasks, the same seed the same ones) and two clients of one
 * run draw apart. Undefined outside a run: a random stream.
 */
export function seedFromRun(env: NodeJS.ProcessEnv): number | undefined {
  if (!env.A3R_SEED || !/^\d{1,9}$/.test(env.A3R_SEED)) return undefined;
  const client = /^\d{1,4}$/.test(env.A3R_CLIENT_INDEX ?? "") ? Number(env.A3R_CLIENT_INDEX) : 0;
  return (Number(env.A3R_SEED) * 1_000_003 + client * 100_003) % 2 ** 31;
}
