import { existsSync, readdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, relative, sep } from "node:path";
import { isProgramName, type Blueprint } from "../../blueprints/index.ts";
import { checkoutRoot } from "../../core/checkout-root.ts";
import { bwrapArguments, isWithin, joinNetworkPrefix, type SandboxSpec } from "../../core/sandbox/bwrap-command.ts";
import { chooseSandbox, parseSandboxMode, type SandboxDecision, type SandboxMode } from "../../core/sandbox/sandbox-choice.ts";

/**
 * What a run's processes see inside the sandbox (core/sandbox/): one rule for the classic
 * command, the swarm server and its clients.
 *
 * | what | how |
 * | --- | --- |
 * | the root file system | read-only |
 * | the result directory | read-write (the run's own; its config copy, logs, checkpoints, output) |
 * | /tmp, /dev/shm | private, empty, writable |
 * | the home folder, /root, /home | hidden (empty tmpfs); the codebase, the interpreter, the config, a3r itself and the PATH's tools are bound back read-only |
 * | ~/.ssh, ~/.aws, ~/.config, ~/.gnupg, ~/.docker, ~/.kube, ~/.netrc ..., /etc/shadow | hidden even where a bound folder holds them |
 * | the other runs' folders | hidden: a campaign run's whole runs folder (every campaign), else the result directory's siblings; this run's is bound back |
 * | the Hugging Face cache (`~/.cache/huggingface`, `HF_HOME`, `HF_HUB_CACHE`) | read-only, its token covered |
| GPUs | `/dev/nvidia*` bound where present |
 * | network | classic: none (loopback only); swarm: one loopback-only namespace for the server and its clients, reached by the worker through the relay (core/sandbox/port-relay.mjs); `network: host` in the front matter: the host's |
 *
 * Left out: choosing whether to sandbox (core/sandbox/sandbox-choice.ts) and starting the
 * processes (attempt-launch.ts).
 */

/** Folders of credentials under the home folder: never visible, even inside a bound path. */
const secretDirNames = [".ssh", ".aws", ".config", ".gnupg", ".docker", ".kube", ".azure", ".password-store", ".local/share/keyrings"];
/** Credential files under the home folder, covered by /dev/null. */
const secretFileNames = [
  ".netrc",
  ".git-credentials",
  ".pypirc",
  ".npmrc",
  ".pgpass",
  ".bash_history",
  ".python_history",
  ".my.cnf",
  ".cache/huggingface/token",
];

/** The system's password hashes: read-only already, and unreadable too (a root run keeps uid 0). */
const systemSecretFiles = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"];

/** The front matter's `sandbox:` and the host's setting, checked; the run's decision (throws when it must not start). */
export function decideSandbox(blueprint: Blueprint, hostSetting: string | undefined, env: NodeJS.ProcessEnv): SandboxDecision {
  const host = parseSandboxMode(hostSetting, "the host's sandbox setting (--sandbox, A3R_SANDBOX or hosts.yaml sandbox:)");
  const fromBlueprint = parseSandboxMode(blueprint.frontMatter.sandbox, "front matter sandbox");
  const decision = chooseSandbox({ ...(host ? { host } : {}), ...(fromBlueprint ? { blueprint: fromBlueprint } : {}) }, env);
  if (decision.mode !== "bwrap") return decision;
  const network =
    blueprint.frontMatter.network === "host"
      ? "the host's network (network: host)"
      : wantsHostNetwork(blueprint)
        ? "the host's network (a swarm run of a worker that is not root: its clients could not join the server's namespace)"
        : blueprint.mode === "swarm"
          ? "loopback only, shared by the server and its clients"
          : "loopback only";
  return { ...decision, why: `${decision.why}; ${network}` };
}

/**
 * Whether the run keeps the host's network: `network: host` in the front matter (downloads,
 * remote APIs), or a swarm run of a worker that is not root, whose clients could not join
 * their server's namespace (it belongs to bubblewrap's user namespace, and nsenter, which
 * enters the network namespace before the user one, is refused; the file system is
 * confined all the same, and the decision's `why` says so).
 */
export function wantsHostNetwork(blueprint: Blueprint): boolean {
  return blueprint.frontMatter.network === "host" || (blueprint.mode === "swarm" && process.getuid?.() !== 0);
}

/** The role of a process in its attempt: the classic command, the swarm server, a swarm client. */
export type SandboxRole = { kind: "main" } | { kind: "server" } | { kind: "client"; serverNamespace: string };

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** The top-level entry of `home` that holds `path` (~/.pyenv for ~/.pyenv/shims), or the path itself. */
function homeEntryOf(path: string, home: string): string {
  if (!isWithin(path, home) || path === home) return path;
  return join(home, relative(home, path).split(sep)[0]!);
}

/** What an interpreter needs: the venv (or program) as named, and the real prefix it links to. */
function interpreterPaths(venv: string, searchPath: string): string[] {
  const named = isProgramName(venv)
    ? searchPath
        .split(delimiter)
        .filter(isAbsolute)
        .map((folder) => join(folder, venv))
        .find(existsSync)
    : venv;
  if (!named) return [];
  const real = realOrSelf(named);
  // bin/python3.11 -> the install's prefix (its lib/ and include/ too).
  return [named, dirname(dirname(real)), dirname(real)];
}

/**
 * The Hugging Face cache, read-only: a run loads its model from there (the home folder that
 * holds it is hidden, and the sandbox has no network to fetch it again). Its token file is
 * covered like the other credentials.
 */
function modelCaches(env: NodeJS.ProcessEnv, home: string): string[] {
  const named = [env.HF_HOME, env.HF_HUB_CACHE, env.TRANSFORMERS_CACHE, env.XDG_CACHE_HOME ? join(env.XDG_CACHE_HOME, "huggingface") : undefined];
  return [join(home, ".cache", "huggingface"), ...named.filter((path): path is string => typeof path === "string" && isAbsolute(path))];
}

/**
 * The folder of the other runs' result directories: for a run of a campaign
 * (`<runs>/<campaign>/results/<id>` beside `topic.md`) every campaign's (`<runs>`), else the
 * result directory's siblings.
 */
function otherRunsOf(resultDir: string): string {
  const campaign = dirname(dirname(resultDir));
  return basename(dirname(resultDir)) === "results" && existsSync(join(campaign, "topic.md")) ? dirname(campaign) : dirname(resultDir);
}

export interface SandboxInput {
  blueprint: Blueprint;
  resultDir: string;
  env: NodeJS.ProcessEnv;
}

/** The sandbox spec of one process of the run. Reads the file system (what exists), starts nothing. */
export function sandboxSpecOf(input: SandboxInput, role: SandboxRole): SandboxSpec {
  const { blueprint, resultDir, env } = input;
  const home = realOrSelf(env.HOME || homedir());
  const searchPath = env.PATH ?? "";
  const onPath = searchPath
    .split(delimiter)
    .filter(isAbsolute)
    .map((folder) => homeEntryOf(realOrSelf(folder), home))
    // A PATH entry that is the home folder itself would show all of it.
    .filter((path) => path !== home);
  const readable = [
    blueprint.codebase,
    ...interpreterPaths(blueprint.venv, searchPath),
    ...(blueprint.config ? [dirname(blueprint.config)] : []),
    checkoutRoot,
    dirname(dirname(realOrSelf(process.execPath))),
    ...onPath,
    ...modelCaches(env, home),
  ]
    .map(realOrSelf)
    // A codebase that is the home folder is bound, its credentials covered again (bwrap-command.ts).
    .filter((path) => existsSync(path) && !secretDirNames.some((name) => isWithin(path, join(home, name))));
  const hidden = [home, "/root", "/home", otherRunsOf(realOrSelf(resultDir))].filter((path) => existsSync(path));
  const devices = existsSync("/dev")
    ? readdirSync("/dev")
        .filter((name) => name.startsWith("nvidia"))
        .map((name) => `/dev/${name}`)
    : [];
  const homes = [...new Set([home, "/root"])];
  return {
    writable: [realOrSelf(resultDir)],
    readable,
    hidden,
    secretDirs: homes.flatMap((folder) => secretDirNames.map((name) => join(folder, name))).filter((path) => existsSync(path)),
    secretFiles: [
      ...homes.flatMap((folder) => secretFileNames.map((name) => join(folder, name))),
      ...modelCaches(env, home).map((cache) => join(cache, "token")),
      ...systemSecretFiles,
    ].filter((path) => existsSync(path)),
    devices,
    network: role.kind === "client" || wantsHostNetwork(blueprint) ? "shared" : "none",
  };
}

/**
 * The words that confine one process (`[nsenter ... --] bwrap ... --chdir CWD --`), or
 * undefined when the run is not sandboxed. A client joins its server's namespace.
 */
export function confineWords(decision: SandboxDecision | undefined, input: SandboxInput, role: SandboxRole, cwd: string): string[] | undefined {
  if (decision?.mode !== "bwrap" || !decision.binary) return undefined;
  const join = role.kind === "client" && !wantsHostNetwork(input.blueprint) ? joinNetworkPrefix(role.serverNamespace, process.getuid?.() === 0) : [];
  return [...join, decision.binary, ...bwrapArguments(sandboxSpecOf(input, role)), "--chdir", cwd, "--"];
}

/** The relay a sandboxed swarm server runs beside it, so the worker outside can reach its loopback. */
export const relayScript = join(checkoutRoot, "core", "sandbox", "port-relay.mjs");

export type { SandboxDecision, SandboxMode };
