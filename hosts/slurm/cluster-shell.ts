import { spawn } from "node:child_process";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { SFTPWrapper } from "ssh2";
import { A3rError } from "../../core/errors.ts";
import type { ExecResult, SshConnection } from "../ssh/ssh-connection.ts";

/**
 * Where a slurm host's client commands run: on this machine (`sh -c`, files through the
 * file system) or on the cluster's login node (one shared ssh2 connection, files over
 * SFTP). The slurm launcher speaks only to this, so both paths run the same scripts.
 */
export interface ClusterShell {
  /** "this machine" or "login node NAME", for messages. */
  readonly where: string;
  exec(script: string, options: { idempotent: boolean; timeoutMs?: number }): Promise<ExecResult>;
  writeFile(path: string, content: Buffer | string): Promise<void>;
  /** The file's bytes, or undefined when it does not exist. */
  readFile(path: string): Promise<Buffer | undefined>;
  /** Every regular file under `root`, relative to it; none when `root` does not exist. */
  listFiles(root: string): Promise<string[]>;
  close(): Promise<void>;
}

export class LocalShell implements ClusterShell {
  readonly where = "this machine";

  exec(script: string, options: { idempotent: boolean; timeoutMs?: number }): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const child = spawn("sh", ["-c", script], { stdio: ["ignore", "pipe", "pipe"], detached: false });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const timeoutMs = options.timeoutMs ?? 30_000;
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(
          new A3rError("REMOTE_COMMAND_FAILED", `a Slurm command on this machine did not finish within ${timeoutMs} ms`, {
            details: { command: script.slice(0, 200) },
          }),
        );
      }, timeoutMs);
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(new A3rError("REMOTE_COMMAND_FAILED", `cannot run sh on this machine: ${error.message}`, { cause: error }));
      });
      child.once("close", (code) => {
        clearTimeout(timer);
        resolve({ stdout, stderr, code });
      });
    });
  }

  async writeFile(path: string, content: Buffer | string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }

  async readFile(path: string): Promise<Buffer | undefined> {
    return readFile(path).catch(() => undefined);
  }

  async listFiles(root: string, prefix = ""): Promise<string[]> {
    const entries = await readdir(join(root, prefix), { withFileTypes: true }).catch(() => []);
    const files: string[] = [];
    for (const entry of entries) {
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) files.push(...(await this.listFiles(root, relative)));
      else if (entry.isFile()) files.push(relative);
    }
    return files;
  }

  async close(): Promise<void> {}
}

export class LoginNodeShell implements ClusterShell {
  readonly where: string;

  constructor(
    private readonly connection: SshConnection,
    loginName: string,
  ) {
    this.where = `login node ${loginName}`;
  }

  exec(script: string, options: { idempotent: boolean; timeoutMs?: number }): Promise<ExecResult> {
    return this.connection.exec(script, { idempotent: options.idempotent, timeoutMs: options.timeoutMs ?? 30_000 });
  }

  async writeFile(path: string, content: Buffer | string): Promise<void> {
    await this.connection.withSftp(
      (sftp) => new Promise<void>((resolve, reject) => sftp.writeFile(path, content, (error) => (error ? reject(error) : resolve()))),
      { idempotent: true },
    );
  }

  async readFile(path: string): Promise<Buffer | undefined> {
    return this.connection.withSftp((sftp) => sftpRead(sftp, path), { idempotent: true });
  }

  async listFiles(root: string): Promise<string[]> {
    return this.connection.withSftp((sftp) => sftpList(sftp, root, ""), { idempotent: true });
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}

function sftpRead(sftp: SFTPWrapper, path: string): Promise<Buffer | undefined> {
  return new Promise((resolve) => sftp.readFile(path, (error, data) => resolve(error ? undefined : data)));
}

async function sftpList(sftp: SFTPWrapper, root: string, prefix: string): Promise<string[]> {
  const entries = await new Promise<Array<{ filename: string; attrs: { isDirectory(): boolean; isFile(): boolean } }>>((resolve) =>
    sftp.readdir(prefix ? `${root}/${prefix}` : root, (error, list) => resolve(error ? [] : (list as never))),
  );
  const files: string[] = [];
  for (const entry of entries) {
    const relative = prefix ? `${prefix}/${entry.filename}` : entry.filename;
    if (entry.attrs.isDirectory()) files.push(...(await sftpList(sftp, root, relative)));
    else if (entry.attrs.isFile()) files.push(relative);
  }
  return files;
}
