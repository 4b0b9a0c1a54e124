import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { isMap, isSeq, LineCounter, parseDocument, type Document } from "yaml";
import { z } from "zod";
import { A3rError } from "../../core/errors.ts";
import type { LocalHostConfig } from "../local/local-kind.ts";
import { expandHome, type HostEntry, type LoadedHost, type ResolveContext } from "../port/host-kind.ts";
import type { QueueHostConfig } from "../queue/queue-kind.ts";
import type { RayHostConfig } from "../ray/ray-config.ts";
import type { SlurmHostConfig } from "../slurm/slurm-config.ts";
import type { SshHostConfig } from "../ssh/ssh-kind.ts";
import { hostKindOf, hostKinds, kindList } from "./registry.ts";

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
 * Each entry is read by its kind (`kinds/registry.ts`): its schema, its own rules, how it
 * is resolved. This file knows no kind by name.
 *
 * Left out: secrets (passwords, passphrases: use an agent), jump hosts, and per-host
 * environment variables (the worker reads its own configuration on the host).
 */
function hostsFileSchema() {
  const [first, ...rest] = hostKinds().map((kind) => kind.schema.extend(sandboxField));
  if (!first) throw new Error("no host kind is registered");
  return z.strictObject({
    ssh_config: z.string().min(1).optional(),
    hosts: z.array(z.discriminatedUnion("kind", [first, ...rest])).min(1, "list at least one host"),
  });
}

export type { HostEntry, LoadedHost } from "../port/host-kind.ts";
export { defaultA3rCommand, runningA3rCommand } from "../port/host-kind.ts";
export type { LocalHostConfig, QueueHostConfig, RayHostConfig, SlurmHostConfig, SshHostConfig };

/** A loaded host: a built-in kind's config, or that of any other registered kind (`LoadedHost`). */
export type HostConfig = LocalHostConfig | SshHostConfig | QueueHostConfig | SlurmHostConfig | RayHostConfig | LoadedHost;

export interface HostsFile {
  file: string;
  hosts: HostConfig[];
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
export function parseHostsText(text: string, file: string): { sshConfig: string | undefined; hosts: HostEntry[] } {
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
  const checked = hostsFileSchema().safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "(top level)";
    const hostEntry = issue.path[0] === "hosts" && typeof issue.path[1] === "number" ? document.getIn(["hosts", issue.path[1]]) : undefined;
    const hostName = isMap(hostEntry) ? hostEntry.get("name") : undefined;
    const about = typeof hostName === "string" ? ` (host "${hostName}")` : "";
    const kindName = isMap(hostEntry) ? hostEntry.get("kind") : undefined;
    throw invalid(file, lineOf(document, lineCounter, issue.path), `${field}${about}: ${issue.message}`, hintFor(issue.path, kindName));
  }
  const hosts = checked.data.hosts as unknown as HostEntry[];
  const problemAt =
    (index: number) =>
    (field: string, message: string, hint: string): never => {
      throw invalid(file, lineOf(document, lineCounter, ["hosts", index, ...(field ? [field] : [])]), message, hint);
    };
  const names = new Set<string>();
  for (const [index, host] of hosts.entries()) {
    if (names.has(host.name))
      throw invalid(file, lineOf(document, lineCounter, ["hosts", index, "name"]), `host name "${host.name}" is used twice`, "give every host its own name");
    names.add(host.name);
    hostKindOf(host).checkEntry?.(host, problemAt(index));
  }
  for (const [index, host] of hosts.entries()) hostKindOf(host).checkReferences?.(host, hosts, problemAt(index));
  if (!isSeq(document.get("hosts"))) throw invalid(file, 1, "hosts must be a list", "write hosts: followed by - name: ... entries");
  return { sshConfig: checked.data.ssh_config, hosts };
}

function hintFor(path: readonly PropertyKey[], kindName: unknown): string {
  const last = String(path[path.length - 1] ?? "");
  if (last === "kind") return `kind is ${kindList()}`;
  const kind = typeof kindName === "string" ? hostKinds().find((candidate) => candidate.kind === kindName) : undefined;
  const own = path.length > 2 ? kind?.hint?.(last, path.slice(2)) : undefined;
  if (own !== undefined) return own;
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
  let sshConfigText: Promise<string> | undefined;
  const context: ResolveContext = {
    home,
    entries: parsed.hosts,
    sshConfigText: () => (sshConfigText ??= readFile(sshConfigFile, "utf8").catch(() => "")),
  };
  // An entry another one claims (a slurm host's login node) submits; it is not a host runs are placed on.
  const claimed = new Set(parsed.hosts.flatMap((host) => hostKindOf(host).claims?.(host) ?? []));
  const hosts: HostConfig[] = [];
  for (const host of parsed.hosts) if (!claimed.has(host.name)) hosts.push(withSandbox(host, await hostKindOf(host).resolve(host, context)));
  return { file, hosts };
}

/**
 * Any entry may say `sandbox: bwrap | none`: whether its runs' commands execute in
 * bubblewrap (worker/launch/sandbox-plan.ts; absent = bwrap where it works). Every kind
 * runs `<a3r> worker run` through a shell, so the setting reaches the worker as
 * `env A3R_SANDBOX=...` before the host's a3r command. Queue daemons are started on their
 * cluster with their own environment: set A3R_SANDBOX there.
 */
const sandboxField = { sandbox: z.enum(["bwrap", "none"]).optional() };

function withSandbox(entry: HostEntry, host: HostConfig): HostConfig {
  const sandbox = (entry as { sandbox?: unknown }).sandbox;
  if (sandbox !== "bwrap" && sandbox !== "none") return host;
  const a3r = (host as { a3r?: unknown }).a3r;
  return { ...host, sandbox, ...(typeof a3r === "string" ? { a3r: `env A3R_SANDBOX=${sandbox} ${a3r}` } : {}) } as HostConfig;
}

export function findHost(hostsFile: HostsFile, hostName: string): HostConfig {
  const host = hostsFile.hosts.find((candidate) => candidate.name === hostName);
  if (host) return host;
  throw new A3rError("HOST_UNKNOWN", `no host named "${hostName}" in ${hostsFile.file}`, {
    hint: `known hosts: ${hostsFile.hosts.map((candidate) => candidate.name).join(", ")}`,
  });
}
