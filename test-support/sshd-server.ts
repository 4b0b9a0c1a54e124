import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort, stopProcess, waitForPort } from "./free-port.ts";

const run = promisify(execFile);

/**
 * A real OpenSSH server for one test file, on 127.0.0.1 and a free port, with its own host
 * key, a user key pair authorized for the current user, and everything in a temp folder.
 *
 * ```ts
 * const sshd = await startSshServer();
 * // connect to 127.0.0.1:sshd.port as sshd.user with sshd.userKeyFile, pin sshd.hostKeyFingerprint
 * await sshd.dropConnections();   // kill the server side of every open session
 * await sshd.stop();
 * ```
 */
export interface SshServerHandle {
  port: number;
  user: string;
  dir: string;
  userKeyFile: string;
  /** As `ssh-keygen -l` prints it: "SHA256:..." */
  hostKeyFingerprint: string;
  logFile: string;
  /** SIGKILLs the per-connection sshd processes: clients see a dropped connection. */
  dropConnections(): Promise<number>;
  stop(): Promise<void>;
}

export const sshdBinary = process.env.A3R_SSHD ?? "/usr/sbin/sshd";

export async function fingerprintOfPublicKeyFile(file: string): Promise<string> {
  const { stdout } = await run("ssh-keygen", ["-l", "-f", file]);
  const match = /(SHA256:[A-Za-z0-9+/]+)/.exec(stdout);
  if (!match) throw new Error(`ssh-keygen -l printed no fingerprint for ${file}: ${stdout}`);
  return match[1]!;
}

export async function generateKey(file: string): Promise<void> {
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "a3r-test", "-f", file]);
}

export async function startSshServer(): Promise<SshServerHandle> {
  const dir = await mkdtemp(join(tmpdir(), "a3r-sshd-"));
  await mkdir("/run/sshd", { recursive: true }).catch(() => undefined);
  const hostKey = join(dir, "host_ed25519");
  const userKeyFile = join(dir, "user_ed25519");
  await Promise.all([generateKey(hostKey), generateKey(userKeyFile)]);
  const authorizedKeys = join(dir, "authorized_keys");
  await writeFile(authorizedKeys, await readFile(`${userKeyFile}.pub`, "utf8"), { mode: 0o600 });
  const hostKeyFingerprint = await fingerprintOfPublicKeyFile(`${hostKey}.pub`);
  const user = userInfo().username;
  const logFile = join(dir, "sshd.log");
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freePort();
    const config = join(dir, "sshd_config");
    await writeFile(
      config,
      [
        `Port ${port}`,
        "ListenAddress 127.0.0.1",
        `HostKey ${hostKey}`,
        `PidFile ${join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${authorizedKeys}`,
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "MaxSessions 10",
        "MaxStartups 100:30:200",
        "Subsystem sftp internal-sftp",
        "LogLevel VERBOSE",
        "",
      ].join("\n"),
    );
    const child = spawn(sshdBinary, ["-D", "-f", config, "-E", logFile], { stdio: "ignore" });
    const spawned = await new Promise<boolean>((resolve) => {
      child.once("spawn", () => resolve(true));
      child.once("error", (error) => {
        lastError = new Error(`cannot start ${sshdBinary}: ${error.message} (install openssh-server, as .ci/run does)`);
        resolve(false);
      });
    });
    if (!spawned) break;
    try {
      await waitForPort(port, 10_000, child);
    } catch (error) {
      lastError = new Error(`${(error as Error).message}: ${await readFile(logFile, "utf8").catch(() => "")}`);
      await stopProcess(child);
      continue;
    }
    const dropConnections = async (): Promise<number> => {
      // The whole tree under the listener: the privileged monitor and the session
      // process of each connection (killing only the monitor can leave the session up).
      const children: number[] = [];
      let frontier = [child.pid!];
      while (frontier.length > 0) {
        const next: number[] = [];
        for (const parent of frontier) {
          const found = await run("pgrep", ["-P", String(parent)]).then(
            ({ stdout }) => stdout.split("\n").filter(Boolean).map(Number),
            () => [] as number[],
          );
          next.push(...found);
        }
        children.push(...next);
        frontier = next;
      }
      for (const pid of children) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      return children.length;
    };
    return {
      port,
      user,
      dir,
      userKeyFile,
      hostKeyFingerprint,
      logFile,
      dropConnections,
      stop: async () => {
        await dropConnections();
        await stopProcess(child);
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError ?? new Error("sshd did not start");
}
