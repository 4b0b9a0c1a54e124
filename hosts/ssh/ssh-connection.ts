import { readFile } from "node:fs/promises";
import ssh2 from "ssh2";
import type { Client as SshClient, ClientChannel, ConnectConfig, SFTPWrapper } from "ssh2";
import { A3rError } from "../../core/errors.ts";
import { ChannelLimiter } from "./channel-limiter.ts";
import { verifyHostKey, type HostKeyVerdict } from "./host-key.ts";

// ssh2 is CommonJS: Node's ESM loader sees only its default export.
const { Client, utils } = ssh2;
type Client = SshClient;

/**
 * One ssh2 connection to one host, shared by every run on it: keepalive on, host key
 * pinned, at most 8 channels (exec or SFTP) at once with the rest queued, and a reconnect
 * with exponential backoff when the connection drops. Commands marked `idempotent` (reads,
 * polls) are retried on a fresh connection; others fail with HOST_UNREACHABLE and the
 * caller decides (a launch checks its marker before trying again).
 *
 * Left out: jump hosts, password and keyboard-interactive auth, port forwarding, and
 * passphrases (use an agent for an encrypted key).
 */
export interface SshConnectionOptions {
  /** The host's name in hosts.yaml, for messages. */
  name: string;
  host: string;
  port: number;
  username: string;
  identityFiles: string[];
  /** An agent socket (SSH_AUTH_SOCK) to authenticate with. */
  agent?: string | undefined;
  /** The pinned fingerprint ("SHA256:..."); without one every key is refused. */
  hostKey: string | undefined;
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Handshake and authentication must finish within this. */
  readyTimeoutMs?: number;
  maxChannels?: number;
  /** How long to keep trying to reconnect before giving up with HOST_UNREACHABLE; 0 = one try. */
  reconnectForMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number | null;
}

export interface ExecOptions {
  timeoutMs?: number;
  /** Safe to run again after a dropped connection (it changes nothing, or checks first). */
  idempotent?: boolean;
}

export class SshConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;
  private readonly limiter: ChannelLimiter;
  /** Successful connects so far: a reconnect makes it 2 and more. */
  connects = 0;
  lastHostKey: HostKeyVerdict | undefined;

  constructor(readonly options: SshConnectionOptions) {
    this.limiter = new ChannelLimiter(options.maxChannels ?? 8);
  }

  get peakChannels(): number {
    return this.limiter.peak;
  }

  /** Connects now (with the reconnect policy); resolves when authenticated. */
  async connect(): Promise<void> {
    await this.ensureClient();
  }

  private async ensureClient(): Promise<Client> {
    if (this.closed) throw new A3rError("HOST_UNREACHABLE", `connection to ${this.options.name} was closed`, { hint: "open a new connection" });
    if (this.client) return this.client;
    this.connecting ??= this.connectWithBackoff().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connectWithBackoff(): Promise<Client> {
    const deadline = Date.now() + (this.options.reconnectForMs ?? 60_000);
    let delay = this.options.backoffInitialMs ?? 200;
    for (;;) {
      try {
        return await this.connectOnce();
      } catch (error) {
        const retryable = error instanceof A3rError && error.retryable;
        if (!retryable || this.closed || Date.now() + delay > deadline) throw error;
        await new Promise((done) => setTimeout(done, delay));
        delay = Math.min(delay * 2, this.options.backoffMaxMs ?? 5000);
      }
    }
  }

  private async connectOnce(): Promise<Client> {
    const privateKey = await this.loadKey();
    const client = new Client();
    const { name, host, port } = this.options;
    const config: ConnectConfig = {
      host,
      port,
      username: this.options.username,
      readyTimeout: this.options.readyTimeoutMs ?? 10_000,
      keepaliveInterval: this.options.keepaliveIntervalMs ?? 5_000,
      keepaliveCountMax: this.options.keepaliveCountMax ?? 3,
      hostVerifier: (key: Buffer) => {
        this.lastHostKey = verifyHostKey(key, this.options.hostKey);
        return this.lastHostKey.accepted;
      },
    };
    if (privateKey) config.privateKey = privateKey;
    if (this.options.agent) config.agent = this.options.agent;
    return new Promise<Client>((resolve, reject) => {
      let ready = false;
      client.once("ready", () => {
        ready = true;
        this.client = client;
        this.connects += 1;
        resolve(client);
      });
      client.on("error", (error: Error & { level?: string; code?: string }) => {
        if (ready) return; // after ready, "close" follows and the next command reconnects
        reject(this.classify(error));
        client.end();
      });
      client.once("close", () => {
        if (this.client === client) this.client = undefined;
        if (!ready)
          reject(
            new A3rError("HOST_UNREACHABLE", `${name} (${host}:${port}) closed the connection during the handshake`, {
              hint: "check that an ssh server listens there",
            }),
          );
      });
      try {
        client.connect(config);
      } catch (error) {
        reject(new A3rError("SSH_KEY_INVALID", `cannot use the key for ${name}: ${(error as Error).message}`, { hint: "check identity_file in hosts.yaml" }));
      }
    });
  }

  private async loadKey(): Promise<Buffer | undefined> {
    const file = this.options.identityFiles[0];
    if (file === undefined) {
      if (this.options.agent) return undefined;
      throw new A3rError(
        "SSH_KEY_INVALID",
        `no key for ${this.options.name}: hosts.yaml names no identity_file, no agent, and ~/.ssh/config has no IdentityFile`,
        {
          hint: "set identity_file: ~/.ssh/id_ed25519 (or agent: true) for this host",
        },
      );
    }
    let key: Buffer;
    try {
      key = await readFile(file);
    } catch (error) {
      throw new A3rError("SSH_KEY_INVALID", `cannot read the key file (${(error as NodeJS.ErrnoException).code ?? String(error)})`, {
        where: file,
        hint: "check identity_file in hosts.yaml and the file's permissions",
      });
    }
    const parsed = utils.parseKey(key);
    if (parsed instanceof Error) {
      throw new A3rError("SSH_KEY_INVALID", `the key file is not a usable private key: ${parsed.message}`, {
        where: file,
        hint: "give an OpenSSH or PEM private key without passphrase, or use agent: true",
      });
    }
    return key;
  }

  private classify(error: Error & { level?: string; code?: string }): A3rError {
    const { name, host, port } = this.options;
    const verdict = this.lastHostKey;
    if (verdict && !verdict.accepted) {
      if (verdict.reason === "unknown") {
        return new A3rError("HOST_KEY_UNKNOWN", `${name} (${host}:${port}) offered host key ${verdict.fingerprint}, and hosts.yaml pins none`, {
          hint: `check it on the host (ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub) and add host_key: "${verdict.fingerprint}"`,
          details: { fingerprint: verdict.fingerprint },
        });
      }
      return new A3rError(
        "HOST_KEY_MISMATCH",
        `${name} (${host}:${port}) offered host key ${verdict.fingerprint}, but hosts.yaml pins ${this.options.hostKey}: refused`,
        {
          hint: "if the host was reinstalled, verify the new key on the host and update host_key; otherwise someone may be intercepting the connection",
          details: { fingerprint: verdict.fingerprint, pinned: this.options.hostKey },
        },
      );
    }
    if (error.level === "client-authentication") {
      return new A3rError("SSH_AUTH_FAILED", `${name}: ${this.options.username}@${host}:${port} refused the key`, {
        hint: "add the public key to the user's authorized_keys, or fix user/identity_file",
      });
    }
    if (error.code === "ENOTFOUND" || error.code === "EAI_AGAIN") {
      return new A3rError("HOST_UNKNOWN", `${name}: the address ${host} does not resolve`, { hint: "fix host in hosts.yaml or the HostName in ~/.ssh/config" });
    }
    return new A3rError("HOST_UNREACHABLE", `${name} (${host}:${port}) is unreachable: ${error.message}`, {
      hint: "check the address, port and firewall, and that sshd runs there",
      cause: error,
    });
  }

  /** Runs a shell command on the host and collects its output. */
  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    for (;;) {
      let connected = false;
      try {
        return await this.limiter.run(async () => {
          const client = await this.ensureClient();
          connected = true;
          return this.execOnce(client, command, options.timeoutMs ?? 30_000);
        });
      } catch (error) {
        // Only a drop under a running command is retried; a failed (re)connect has already
        // had its backoff and is final.
        const dropped = connected && error instanceof A3rError && error.code === "HOST_UNREACHABLE" && !this.closed;
        if (!dropped || !options.idempotent) throw error;
      }
    }
  }

  private execOnce(client: Client, command: string, timeoutMs: number): Promise<ExecResult> {
    return new Promise<ExecResult>((resolve, reject) => {
      let stdout = "";
      let stderr = "";
      let channel: ClientChannel | undefined;
      let settled = false;
      const finish = (outcome: { result?: ExecResult; error?: A3rError }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        client.removeListener("close", onClose);
        if (outcome.error) reject(outcome.error);
        else resolve(outcome.result!);
      };
      const onClose = (): void => finish({ error: new A3rError("HOST_UNREACHABLE", `connection to ${this.options.name} dropped while running a command`) });
      client.once("close", onClose);
      const timer = setTimeout(() => {
        channel?.close();
        finish({
          error: new A3rError("REMOTE_COMMAND_FAILED", `command on ${this.options.name} did not finish within ${timeoutMs} ms`, {
            details: { command: command.slice(0, 200) },
          }),
        });
      }, timeoutMs);
      try {
        client.exec(command, (error, stream) => {
          if (error) return finish({ error: this.channelError(error) });
          channel = stream;
          stream.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
          stream.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
          stream.on("close", (code: number | null) => finish({ result: { stdout, stderr, code: typeof code === "number" ? code : null } }));
        });
      } catch (error) {
        finish({ error: this.channelError(error as Error) });
      }
    });
  }

  private channelError(error: Error): A3rError {
    // "Not connected" and "No response from server" mean the transport is gone.
    return new A3rError("HOST_UNREACHABLE", `cannot open a channel to ${this.options.name}: ${error.message}`, { cause: error });
  }

  /** Runs `task` with an SFTP session (one channel), retried after a drop when `idempotent`. */
  async withSftp<T>(task: (sftp: SFTPWrapper) => Promise<T>, options: { idempotent?: boolean } = {}): Promise<T> {
    for (;;) {
      let connected = false;
      try {
        return await this.limiter.run(async () => {
          const client = await this.ensureClient();
          connected = true;
          const sftp = await new Promise<SFTPWrapper>((resolve, reject) => {
            client.sftp((error, session) => (error ? reject(this.channelError(error)) : resolve(session)));
          });
          try {
            return await task(sftp);
          } catch (error) {
            if (!this.client) throw new A3rError("HOST_UNREACHABLE", `connection to ${this.options.name} dropped during a file transfer`, { cause: error });
            throw error;
          } finally {
            sftp.end();
          }
        });
      } catch (error) {
        const dropped = connected && error instanceof A3rError && error.code === "HOST_UNREACHABLE" && !this.closed;
        if (!dropped || !options.idempotent) throw error;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    await new Promise<void>((resolve) => {
      client.once("close", () => resolve());
      client.end();
      setTimeout(resolve, 1000).unref();
    });
  }
}
