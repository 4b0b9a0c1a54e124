import type { HostConfig } from "./hosts-config.ts";
import type { Launcher } from "./launcher.ts";
import { LocalLauncher } from "./local/local-launcher.ts";
import type { SshConnection } from "./ssh/ssh-connection.ts";

/**
 * The one place that turns a hosts.yaml entry into a launcher. Opening an ssh launcher
 * does not connect yet (the first command does, with the reconnect policy); a queue
 * launcher connects to Redis and checks its eviction policy at once; a slurm launcher runs
 * its client commands here or on its login node (ssh, connected on first use). ssh2 and BullMQ load
 * only when a host of their kind is opened: `a3r status` and local campaigns never pay for them.
 */
export interface OpenLauncherOptions {
  /** How long an ssh host may stay unreachable before a command fails; default 60 s. */
  reconnectForMs?: number;
}

export async function sshConnectionFor(host: Extract<HostConfig, { kind: "ssh" }>, options: OpenLauncherOptions = {}): Promise<SshConnection> {
  const { SshConnection } = await import("./ssh/ssh-connection.ts");
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

export async function openLauncher(host: HostConfig, options: OpenLauncherOptions = {}): Promise<Launcher> {
  switch (host.kind) {
    case "local":
      return new LocalLauncher({ host: host.name, workdir: host.workdir, a3r: host.a3r });
    case "ssh": {
      const { SshLauncher } = await import("./ssh/ssh-launcher.ts");
      return new SshLauncher({ host: host.name, workdir: host.workdir, a3r: host.a3r, connection: await sshConnectionFor(host, options) });
    }
    case "queue":
      return (await import("./queue/queue-launcher.ts")).QueueLauncher.open({ host: host.name, redisUrl: host.redis, queue: host.queue, prefix: host.prefix });
    case "slurm": {
      const { SlurmLauncher } = await import("./slurm/slurm-launcher.ts");
      const { LocalShell, LoginNodeShell } = await import("./slurm/cluster-shell.ts");
      // Through the login node's ssh entry, or the Slurm client commands of this machine.
      const shell = host.login ? new LoginNodeShell(await sshConnectionFor(host.login, options), host.login.name) : new LocalShell();
      return new SlurmLauncher({ host, shell });
    }
  }
}
