import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { isMap, isSeq, LineCounter, parseDocument, type Document } from "yaml";
import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import { checkoutRoot } from "../core/checkout-root.ts";
import { parseDuration } from "../core/duration.ts";
import { resolveSshAlias } from "./ssh/ssh-config.ts";

/**
 * hosts.yaml: the machines blueprints may run on.
 *
 * ```yaml
 * hosts:
 *   - name: workstation        # local: this machine
 *     kind: local
 *     gpus: detect             # a number, or "detect" (nvidia-smi; none found = 0)
 *     workdir: /tmp/a3r-hosts
 *     a3r: "node /opt/a3r/bin/a3r.js"
 *   - name: gpu-box            # ssh: host, port, user may come from ~/.ssh/config
 *     kind: ssh
 *     host: gpu-box
 *     identity_file: ~/.ssh/id_ed25519   # or agent: true
 *     host_key: "SHA256:..."   # as `ssh-keygen -l -f <host key>.pub` prints it
 *     gpus: 8
 *     workdir: /data/a3r
 *   - name: cluster            # queue: daemons on a cluster pull from Redis
 *     kind: queue
 *     redis: redis://redis.cluster.example:6379
 *     gpus: 32                 # slots the dispatcher may fill; each daemon enforces its own
 *   - name: hpc                # slurm: sbatch through the cluster's own scheduler
 *     kind: slurm
 *     login: hpc-login         # an ssh entry of this file; absent = the Slurm commands are here
 *     partition: gpu
 *     account: my-lab
 *     gpus_per_run: 1          # --gres=gpu:1 when a blueprint asks for none
 *     workdir: /scratch/a3r    # on the cluster's shared filesystem
 * ```
 *
 * An ssh entry named by a slurm host's `login` is a login node: it submits, it runs
 * nothing, so it is not a host of its own (clusters forbid computing on login nodes).
 *
 * Left out: secrets (passwords, passphrases: use an agent), jump hosts, and per-host
 * environment variables (the worker reads its own configuration on the host).
 */
const name = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "letters, digits, '.', '_' and '-', starting with a letter or digit");
const gpus = z.union([z.literal("detect"), z.number().int().min(0).max(1024)]);
const absolutePath = z
  .string()
  .min(1)
  .refine((path) => isAbsolute(path) || path.startsWith("~/"), "must be an absolute path (or start with ~/)");

const localHostSchema = z.strictObject({
  name,
  kind: z.literal("local"),
  gpus: gpus.default("detect"),
  max_runs: z.number().int().min(1).max(10_000).optional(),
  workdir: absolutePath,
  a3r: z.string().min(1).optional(),
});

const sshHostSchema = z.strictObject({
  name,
  kind: z.literal("ssh"),
  host: z.string().min(1).optional(),
  port: z.number().int().min(1).max(65535).optional(),
  user: z.string().min(1).optional(),
  identity_file: z.string().min(1).optional(),
  agent: z.boolean().optional(),
  host_key: z
    .string()
    .regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'a SHA256 fingerprint as ssh-keygen -l prints it, e.g. "SHA256:" followed by 43 characters')
    .optional(),
  gpus: gpus.default("detect"),
  max_runs: z.number().int().min(1).max(10_000).optional(),
  workdir: absolutePath,
  a3r: z.string().min(1).optional(),
  connect_timeout: z.number().positive().max(600).optional(),
});

const queueHostSchema = z.strictObject({
  name,
  kind: z.literal("queue"),
  redis: z.string().regex(/^rediss?:\/\//, "a redis:// or rediss:// URL"),
  queue: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' and '-' (BullMQ forbids ':')")
    .default("a3r"),
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/)
    .default("bull"),
  gpus: z.number().int().min(0).max(100_000),
  max_runs: z.number().int().min(1).max(100_000).optional(),
});

/** Partition, account and QOS names: Slurm's own characters, nothing a shell would read. */
const slurmWord = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "letters, digits, '.', '_' and '-'");
const durationText = z.union([z.string(), z.number()]).refine((value) => (parseDuration(value) ?? 0) > 0, 'a duration such as "90m", "4h" or "1h30m"');

const slurmHostSchema = z.strictObject({
  name,
  kind: z.literal("slurm"),
  /** The ssh entry of the login node; absent = the client commands (sbatch, squeue) run here. */
  login: name.optional(),
  partition: slurmWord.optional(),
  account: slurmWord.optional(),
  qos: slurmWord.optional(),
  /** GPUs asked for a run whose blueprint names none (`gpus:` in a blueprint wins). */
  gpus_per_run: z.number().int().min(0).max(64).optional(),
  /** The Gres a GPU is: `gpu`, or `gpu:a100` for a type. */
  gres: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_-]*(:[A-Za-z0-9_.-]+)?$/, 'a Gres name, optionally with a type: "gpu" or "gpu:a100"')
    .default("gpu"),
  cpus_per_run: z.number().int().min(1).max(4096).optional(),
  memory_per_run: z
    .string()
    .regex(/^\d+[KMGT]?$/, 'as sbatch --mem takes it: "64G", "16000M"')
    .optional(),
  /** Overrides the time limit derived from a blueprint's time budget plus the worker's grace. */
  time_limit: durationText.optional(),
  /** More sbatch options, each one word such as "--constraint=a100" (quoted, never read by a shell). */
  sbatch_options: z.array(z.string().regex(/^--[a-z][a-z0-9-]*(=\S+)?$/, 'one sbatch option per item, "--name" or "--name=value", no spaces')).default([]),
  /** SLURM_CONF for the client commands, where the cluster's config is not the default one. */
  slurm_conf: absolutePath.optional(),
  /** Seconds between scancel --signal=TERM and a plain scancel on cancel. */
  cancel_grace: durationText.optional(),
  max_runs: z.number().int().min(1).max(100_000).optional(),
  workdir: absolutePath,
  a3r: z.string().min(1).optional(),
});

const hostSchema = z.discriminatedUnion("kind", [localHostSchema, sshHostSchema, queueHostSchema, slurmHostSchema]);

const hostsFileSchema = z.strictObject({
  ssh_config: z.string().min(1).optional(),
  hosts: z.array(hostSchema).min(1, "list at least one host"),
});

export type LocalHostConfig = z.infer<typeof localHostSchema> & { a3r: string };
export type QueueHostConfig = z.infer<typeof queueHostSchema>;
/** An ssh host after alias resolution: address, port, user and key are final. */
export type SshHostConfig = Omit<z.infer<typeof sshHostSchema>, "host" | "port" | "user"> & {
  alias: string;
  host: string;
  port: number;
  user: string;
  a3r: string;
  identityFiles: string[];
};
/** A slurm host after loading: its login node's ssh entry is resolved (absent = local commands). */
export type SlurmHostConfig = Omit<z.infer<typeof slurmHostSchema>, "login"> & { a3r: string; login?: SshHostConfig };
export type HostConfig = LocalHostConfig | SshHostConfig | QueueHostConfig | SlurmHostConfig;

export interface HostsFile {
  file: string;
  hosts: HostConfig[];
}

/** The command that runs a3r on the host when hosts.yaml does not say. */
export const defaultA3rCommand = "a3r";

/**
 * A local host's default: the a3r that is running now (this node, this checkout's entry),
 * not whatever `a3r` PATH finds (only npx puts one there; `node bin/a3r.js research` had
 * every run lost to `exec: a3r: not found`).
 */
export function runningA3rCommand(): string {
  return `${process.execPath} ${join(checkoutRoot, "bin", "a3r.js")}`;
}

function lineOf(document: Document, lineCounter: LineCounter, path: readonly PropertyKey[]): number {
  // The deepest node that exists along the path: a missing key points at its parent.
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = document.getIn(path.slice(0, depth) as unknown[], true) as { range?: [number, number, number] } | undefined;
    const range = node && typeof node === "object" && "range" in node ? node.range : undefined;
    if (range) return lineCounter.linePos(range[0]).line;
    if (depth === 0 && document.contents && "range" in document.contents && document.contents.range) {
      return lineCounter.linePos(document.contents.range[0]).line;
    }
  }
  return 1;
}

function invalid(file: string, line: number, message: string, hint: string): A3rError {
  return new A3rError("CONFIG_INVALID", message, { where: `${file}:${line}`, hint });
}

/** Parses hosts.yaml text; errors name the file, line and field. Aliases are not resolved here. */
export function parseHostsText(text: string, file: string): { sshConfig: string | undefined; hosts: z.infer<typeof hostSchema>[] } {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  const yamlError = document.errors[0];
  if (yamlError) {
    const line = lineCounter.linePos(yamlError.pos[0]).line;
    throw new A3rError("YAML_INVALID", `hosts file is not valid YAML: ${yamlError.message.split("\n")[0]}`, {
      where: `${file}:${line}`,
      hint: "fix the YAML syntax at that line (indentation, quotes, colons)",
    });
  }
  const value = document.toJS() as unknown;
  const checked = hostsFileSchema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "(top level)";
    const hostEntry = issue.path[0] === "hosts" && typeof issue.path[1] === "number" ? document.getIn(["hosts", issue.path[1]]) : undefined;
    const hostName = isMap(hostEntry) ? hostEntry.get("name") : undefined;
    const about = typeof hostName === "string" ? ` (host "${hostName}")` : "";
    throw invalid(file, lineOf(document, lineCounter, issue.path), `${field}${about}: ${issue.message}`, hintFor(issue.path));
  }
  const names = new Set<string>();
  for (const [index, host] of checked.data.hosts.entries()) {
    if (names.has(host.name))
      throw invalid(file, lineOf(document, lineCounter, ["hosts", index, "name"]), `host name "${host.name}" is used twice`, "give every host its own name");
    names.add(host.name);
    if (host.kind === "ssh" && host.identity_file !== undefined && host.agent === true) {
      throw invalid(
        file,
        lineOf(document, lineCounter, ["hosts", index, "agent"]),
        `host "${host.name}" sets both identity_file and agent`,
        "choose one: a key file, or agent: true (SSH_AUTH_SOCK)",
      );
    }
  }
  for (const [index, host] of checked.data.hosts.entries()) {
    if (host.kind !== "slurm" || host.login === undefined) continue;
    const login = checked.data.hosts.find((candidate) => candidate.name === host.login);
    if (login?.kind !== "ssh")
      throw invalid(
        file,
        lineOf(document, lineCounter, ["hosts", index, "login"]),
        `host "${host.name}": login "${host.login}" is ${login ? `a ${login.kind} host, not an ssh one` : "not a host of this file"}`,
        "name an ssh entry of this hosts file (the cluster's login node), or leave login out when sbatch runs on this machine",
      );
  }
  if (!isSeq(document.get("hosts"))) throw invalid(file, 1, "hosts must be a list", "write hosts: followed by - name: ... entries");
  return { sshConfig: checked.data.ssh_config, hosts: checked.data.hosts };
}

function hintFor(path: readonly PropertyKey[]): string {
  const last = String(path[path.length - 1] ?? "");
  if (last === "kind") return "kind is local, ssh, queue or slurm";
  if (path.includes("sbatch_options")) return 'write each option as one item, e.g. sbatch_options: ["--constraint=a100", "--exclusive"]';
  if (last === "time_limit" || last === "cancel_grace") return 'write a duration such as "90m" or "4h"';
  if (last === "host_key")
    return "run ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub on the host (or ssh-keyscan HOST | ssh-keygen -lf -) and paste the SHA256:... part";
  if (last === "gpus") return 'gpus is a whole number or "detect"';
  if (last === "workdir") return "use an absolute path on that host, e.g. /data/a3r";
  return "see the hosts.yaml example in README.md (Hosts)";
}

export interface LoadHostsOptions {
  /** The OpenSSH client config to resolve aliases with; default ~/.ssh/config (missing = none). */
  sshConfigFile?: string;
  home?: string;
}

/** Reads hosts.yaml, validates it and resolves ssh aliases; throws A3rError naming file:line. */
export async function loadHostsFile(file: string, options: LoadHostsOptions = {}): Promise<HostsFile> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT")
      throw new A3rError("FILE_NOT_FOUND", "hosts file not found", { where: file, hint: "pass --hosts with the path of a hosts.yaml (see README, Hosts)" });
    throw new A3rError("FILE_UNREADABLE", `cannot read the hosts file (${code ?? String(error)})`, { where: file });
  }
  const parsed = parseHostsText(text, file);
  const home = options.home ?? homedir();
  const sshConfigFile = options.sshConfigFile ?? (parsed.sshConfig ? resolve(dirname(file), expandHome(parsed.sshConfig, home)) : `${home}/.ssh/config`);
  let sshConfigText = "";
  if (parsed.hosts.some((host) => host.kind === "ssh")) {
    sshConfigText = await readFile(sshConfigFile, "utf8").catch(() => "");
  }
  const resolveSsh = (host: Extract<(typeof parsed.hosts)[number], { kind: "ssh" }>): SshHostConfig => {
    const alias = host.host ?? host.name;
    const resolved = resolveSshAlias(sshConfigText, alias, home);
    const identityFiles = host.identity_file ? [expandHome(host.identity_file, home)] : host.agent ? [] : resolved.identityFiles;
    return {
      ...host,
      alias,
      host: resolved.hostName ?? alias,
      port: host.port ?? resolved.port ?? 22,
      user: host.user ?? resolved.user ?? process.env.USER ?? "root",
      a3r: host.a3r ?? defaultA3rCommand,
      identityFiles,
    };
  };
  const logins = new Set(parsed.hosts.flatMap((host) => (host.kind === "slurm" && host.login ? [host.login] : [])));
  const hosts: HostConfig[] = parsed.hosts.flatMap((host): HostConfig[] => {
    if (host.kind === "local") return [{ ...host, workdir: expandHome(host.workdir, home), a3r: host.a3r ?? runningA3rCommand() }];
    if (host.kind === "queue") return [host];
    if (host.kind === "slurm") {
      const { login, ...rest } = host;
      const loginEntry = parsed.hosts.find((candidate) => candidate.name === login);
      // On this machine the running a3r is the default, as for a local host; on a login node, `a3r`.
      return [
        {
          ...rest,
          a3r: host.a3r ?? (loginEntry ? defaultA3rCommand : runningA3rCommand()),
          ...(loginEntry?.kind === "ssh" ? { login: resolveSsh(loginEntry) } : { workdir: expandHome(host.workdir, home) }),
        },
      ];
    }
    // A login node submits; it is not a host runs are placed on.
    return logins.has(host.name) ? [] : [resolveSsh(host)];
  });
  return { file, hosts };
}

function expandHome(path: string, home: string): string {
  return path === "~" ? home : path.startsWith("~/") ? `${home}/${path.slice(2)}` : path;
}

export function findHost(hostsFile: HostsFile, hostName: string): HostConfig {
  const host = hostsFile.hosts.find((candidate) => candidate.name === hostName);
  if (host) return host;
  throw new A3rError("HOST_UNKNOWN", `no host named "${hostName}" in ${hostsFile.file}`, {
    hint: `known hosts: ${hostsFile.hosts.map((candidate) => candidate.name).join(", ")}`,
  });
}
