import { dirname, join } from "node:path";
import { isProgramName, type Blueprint } from "../../blueprints/index.ts";
import { shellQuote } from "../../core/shell-quote.ts";
import { overridesAsWords, substitutePlaceholders } from "./placeholders.ts";
import { isPortNumber, type Overrides } from "../../blueprints/index.ts";
import { A3rError } from "../../core/errors.ts";
import type { WorkerSettings } from "../rules/worker-settings.ts";
import { runTagOf, runTagVariable } from "./run-tag.ts";

/**
 * What one attempt will run, decided without side effects (so `--dry-run` prints exactly
 * what a real run launches): the commands after placeholder substitution, the working
 * folder, and the environment the worker adds. The environment a run receives:
 *
 * | variable | value |
 * | --- | --- |
 * | A3R_ATTEMPT | 1, 2, ... |
 * | A3R_RUN_ID | the run's tag (from the result directory): how the worker finds processes that left the group (`run-tag.ts`) |
 * | A3R_RESULT_DIR | the result directory |
 * | A3R_CHECKPOINT_DIR | `<result dir>/checkpoints`: save there, resume from there |
 * | A3R_OUTPUT_DIR | `<result dir>/output`: the run's own files (samples, plots, exports); the rest of the result directory is the worker's |
 * | A3R_RESUME | 1 when the attempt should resume from the last checkpoint, else 0 |
 * | A3R_METRICS_FILE | where a run may write `{"step":N,...}` lines |
 * | A3R_OVERRIDES | the overrides as JSON |
 * | A3R_CONFIG | the config copy with the overrides merged (when there is a config) |
 * | A3R_PORT | the `port` override, when there is one |
 * | A3R_SWARM_URL | swarm mode: the server's URL |
 * | A3R_SEED | the blueprint's `seed`, so the task stream varies with it as the model does |
 * | A3R_CLIENT_INDEX | swarm mode: 1, 2, ... per client line (each client draws its own tasks) |
 * | CUDA_VISIBLE_DEVICES | the GPU slots given to the worker (`--gpus`) |
 *
 * and PATH starts with the interpreter's folder, so `python` (or `node`) is the blueprint's.
 */
export interface AttemptPlanInput {
  blueprint: Blueprint;
  resultDir: string;
  settings: WorkerSettings;
  attempt: number;
  overrides: Overrides;
  /** The command to run: the blueprint's, or a diagnosis's replacement. */
  command: string;
  resume: boolean;
  /** Where the config copy is (or will be) written; null when the blueprint has none. */
  configCopy: string | null;
  gpus?: string;
  swarmUrl?: string;
  /** The absolute path of bin/a3r.js, for the swarm server command. */
  a3rBin: string;
  nodeExecutable: string;
}

export interface AttemptPlan {
  cwd: string;
  env: Record<string, string>;
  /** classic: the command; swarm: the client commands (the server is `serverCommand`). */
  commands: string[];
  serverCommand?: string;
}

export function checkpointDirOf(resultDir: string, mode: Blueprint["mode"]): string {
  return mode === "swarm" ? join(resultDir, "swarm", "checkpoints") : join(resultDir, "checkpoints");
}

/** The folder the run's program may fill as it likes (A3R_OUTPUT_DIR). */
export function outputDirOf(resultDir: string): string {
  return join(resultDir, "output");
}

export function configCopyPath(resultDir: string, attempt: number, config: string | null): string | null {
  if (config === null) return null;
  const extension = /\.(json|ya?ml)$/i.exec(config)?.[1]?.toLowerCase() ?? "yaml";
  return join(resultDir, "config", `attempt-${attempt}.${extension}`);
}

/** Splits a swarm Command section into one command per client (`\` continues a line). */
export function clientCommands(command: string): string[] {
  const joined = command.replace(/\\\r?\n/g, " ");
  return joined
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

export function interpreterPath(venv: string): string {
  // A program name (`node`) is already on PATH; a venv folder holds its interpreter in bin/;
  // a file is the interpreter itself.
  if (isProgramName(venv)) return "";
  return /\/(?:bin\/)?[^/]*(python|node|pypy)[^/]*$/i.test(venv) ? dirname(venv) : join(venv, "bin");
}

/**
 * The run's port as a command word: a port number or nothing. The port comes from the
 * overrides, which a diagnosis may have set from a log an attacker wrote; anything but a
 * port number stops the launch here instead of reaching the shell.
 */
function portWord(port: Overrides[string] | undefined): string | undefined {
  if (port === undefined) return undefined;
  if (isPortNumber(port)) return String(port);
  throw new A3rError("CONFIG_INVALID", `override port=${JSON.stringify(port).slice(0, 80)} is not a port number`, {
    where: "overrides.port",
    hint: "set port to an integer from 1 to 65535, or leave it out",
  });
}

export function planAttempt(input: AttemptPlanInput): AttemptPlan {
  const { blueprint, settings } = input;
  const port = portWord(input.overrides.port);
  const env: Record<string, string> = {
    ...settings.env,
    A3R_ATTEMPT: String(input.attempt),
    [runTagVariable]: runTagOf(input.resultDir),
    A3R_RESULT_DIR: input.resultDir,
    A3R_CHECKPOINT_DIR: checkpointDirOf(input.resultDir, blueprint.mode),
    A3R_OUTPUT_DIR: outputDirOf(input.resultDir),
    A3R_RESUME: input.resume ? "1" : "0",
    A3R_METRICS_FILE: settings.metricsFile,
    A3R_OVERRIDES: JSON.stringify(input.overrides),
    A3R_INTERPRETER: blueprint.venv,
  };
  if (typeof blueprint.frontMatter.seed === "number") env.A3R_SEED = String(blueprint.frontMatter.seed);
  if (input.configCopy) env.A3R_CONFIG = input.configCopy;
  if (port !== undefined) env.A3R_PORT = port;
  if (input.gpus !== undefined) env.CUDA_VISIBLE_DEVICES = input.gpus;
  if (input.swarmUrl) env.A3R_SWARM_URL = input.swarmUrl;
  const values = {
    config: input.configCopy ? shellQuote(input.configCopy) : "",
    overrides: overridesAsWords(input.overrides),
    overrides_json: shellQuote(JSON.stringify(input.overrides)),
    port: port ?? "",
    attempt: String(input.attempt),
    result_dir: shellQuote(input.resultDir),
    checkpoint_dir: shellQuote(env.A3R_CHECKPOINT_DIR!),
    metrics_file: shellQuote(settings.metricsFile),
    resume: input.resume ? "1" : "0",
    swarm_url: input.swarmUrl ? shellQuote(input.swarmUrl) : "{swarm_url}",
  };
  if (blueprint.mode === "classic") {
    return { cwd: blueprint.codebase, env, commands: [substitutePlaceholders(input.command, values)] };
  }
  const serverCommand = [
    shellQuote(input.nodeExecutable),
    shellQuote(input.a3rBin),
    "swarm serve --config",
    input.configCopy ? shellQuote(input.configCopy) : "(missing config)",
    "--port",
    port ?? "0",
    ...(input.resume ? ["--resume"] : []),
  ].join(" ");
  return { cwd: blueprint.codebase, env, serverCommand, commands: clientCommands(input.command).map((line) => substitutePlaceholders(line, values)) };
}

/**
 * The keys of language-model providers: the worker holds them for its own diagnosis, the
 * training program has no business with them (its log is text an attacker may steer).
 * Other credentials a run needs (HF_TOKEN, WANDB_API_KEY) pass as before.
 */
const providerKeyNames =
  /^(?:ANTHROPIC|OPENAI|A3R_LLM|AZURE_OPENAI|GEMINI|GOOGLE|MISTRAL|COHERE|GROQ|TOGETHER|DEEPSEEK|OPENROUTER|XAI|FIREWORKS|PERPLEXITY)_(?:API_)?KEY$/;

/** The blueprint's `env_passthrough`: provider keys its processes may see. */
export function envPassthroughOf(blueprint: Blueprint): string[] {
  const listed = blueprint.frontMatter.env_passthrough;
  return Array.isArray(listed) ? listed.filter((name): name is string => typeof name === "string") : [];
}

/** Provider keys in `base` the run will not see: those the blueprint's `env_passthrough` does not list. */
export function withheldVariables(base: NodeJS.ProcessEnv, passthrough: readonly string[] = []): string[] {
  return Object.keys(base)
    .filter((name) => providerKeyNames.test(name) && !passthrough.includes(name))
    .sort();
}

/** The environment a process gets: the worker's own less the withheld keys, the interpreter first on PATH, then the plan's. */
export function processEnv(base: NodeJS.ProcessEnv, plan: AttemptPlan, venv: string, passthrough: readonly string[] = []): NodeJS.ProcessEnv {
  const path = [interpreterPath(venv), base.PATH ?? ""].filter(Boolean).join(":");
  const env: NodeJS.ProcessEnv = { ...base, PATH: path, ...plan.env };
  for (const name of withheldVariables(base, passthrough)) delete env[name];
  return env;
}
