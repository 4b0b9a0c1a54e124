import { z } from "zod";
import { parseProbe, probeScript } from "../port/host-probe.ts";
import {
  absolutePathSchema,
  applyProbe,
  defaultA3rCommand,
  defineHostKind,
  expandHome,
  gpusSchema,
  hostNameSchema,
  slotsOf,
  type OpenLauncherOptions,
  type ResolveContext,
} from "../port/host-kind.ts";
import type { Launcher } from "../port/launcher.ts";
import { resolveSshAlias } from "./ssh-config.ts";
import type { SshConnection } from "./ssh-connection.ts";

/**
 * `kind: ssh`: a machine reached with ssh2, its host key pinned, `host`, `port`, `user`
 * and key taken from `~/.ssh/config` where hosts.yaml leaves them out. Opening one does
 * not connect yet (the first command does, with the reconnect policy), unless asked.
 */
const sshHostSchema = z.strictObject({
  name: hostNameSchema,
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
  gpus: gpusSchema.default("detect"),
  max_runs: z.number().int().min(1).max(10_000).optional(),
  workdir: absolutePathSchema,
  a3r: z.string().min(1).optional(),
  connect_timeout: z.number().positive().max(600).optional(),
});

type SshHostEntry = z.infer<typeof sshHostSchema>;

/** An ssh host after alias resolution: address, port, user and key are final. */
export type SshHostConfig = Omit<SshHostEntry, "host" | "port" | "user"> & {
  alias: string;
  host: string;
  port: number;
  user: string;
  a3r: string;
  identityFiles: string[];
};

/** An ssh entry with its alias resolved through the ssh client config (also a slurm host's login node). */
export async function resolveSshEntry(entry: SshHostEntry, context: Pick<ResolveContext, "home" | "sshConfigText">): Promise<SshHostConfig> {
  const alias = entry.host ?? entry.name;
  const resolved = resolveSshAlias(await context.sshConfigText(), alias, context.home);
  const identityFiles = entry.identity_file ? [expandHome(entry.identity_file, context.home)] : entry.agent ? [] : resolved.identityFiles;
  return {
    ...entry,
    alias,
    host: resolved.hostName ?? alias,
    port: entry.port ?? resolved.port ?? 22,
    user: entry.user ?? resolved.user ?? process.env.USER ?? "root",
    a3r: entry.a3r ?? defaultA3rCommand,
    identityFiles,
  };
}

/** The connection to an ssh host (ssh2 loads here, on first use). */
export async function sshConnectionFor(host: SshHostConfig, options: OpenLauncherOptions = {}): Promise<SshConnection> {
  const { SshConnection } = await import("./ssh-connection.ts");
  return new SshConnection({
    name: host.name,
    host: host.host,
    port: host.port,
    username: host.user,
    identityFiles: host.identityFiles,
    agent: host.agent ? process.env.SSH_AUTH_SOCK : undefined,
    hostKey: host.host_key,
    readyTimeoutMs: (host.connect_timeout ?? 10) * 1000,
    reconnectForMs: options.reconnectForMs ?? 60_000,
  });
}

async function openSshLauncher(host: SshHostConfig, options: OpenLauncherOptions): Promise<Launcher> {
  const { SshLauncher } = await import("./ssh-launcher.ts");
  const launcher = new SshLauncher({ host: host.name, workdir: host.workdir, a3r: host.a3r, connection: await sshConnectionFor(host, options) });
  if (options.connect) {
    try {
      await launcher.connection.connect();
    } catch (error) {
      await launcher.close().catch(() => undefined);
      throw error;
    }
  }
  return launcher;
}

export const sshHostKind = defineHostKind<SshHostEntry, SshHostConfig>({
  kind: "ssh",
  schema: sshHostSchema,
  hint: (field) =>
    field === "host_key"
      ? "run ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub on the host (or ssh-keyscan HOST | ssh-keygen -lf -) and paste the SHA256:... part"
      : undefined,
  checkEntry: (entry, problem) => {
    if (entry.identity_file !== undefined && entry.agent === true)
      problem("agent", `host "${entry.name}" sets both identity_file and agent`, "choose one: a key file, or agent: true (SSH_AUTH_SOCK)");
  },
  resolve: resolveSshEntry,
  openLauncher: openSshLauncher,
  capacity: async (host, launcher) => {
    if (host.gpus !== "detect") return slotsOf(host, host.gpus);
    const { SshLauncher } = await import("./ssh-launcher.ts");
    if (!(launcher instanceof SshLauncher)) return slotsOf(host, 0);
    const result = await launcher.connection.exec(probeScript(host.a3r, host.workdir), { idempotent: true, timeoutMs: 120_000 });
    return slotsOf(host, parseProbe(result.stdout).gpus.length);
  },
  check: async (host, row) => {
    const connection = await sshConnectionFor(host, { reconnectForMs: 0 });
    try {
      await connection.connect();
      row.reachable = "yes";
      row.hostKey = `ok ${connection.lastHostKey?.fingerprint ?? ""}`.trim();
      applyProbe(row, host, parseProbe((await connection.exec(probeScript(host.a3r, host.workdir), { timeoutMs: 120_000 })).stdout));
    } finally {
      await connection.close();
    }
  },
});
