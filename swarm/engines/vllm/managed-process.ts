import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * A child process the engine owns: its own process group (so a stop reaches whatever it
 * forked, such as vLLM's engine workers), its output appended to a log file, and the last
 * lines kept in memory so a start failure can be reported with the program's own words.
 *
 * Not part of it: restarting (the inference server and the trainer decide that), and
 * reading its protocol (the trainer client reads stdout itself when `pipeStdout` is set).
 */
export class ManagedProcess {
  readonly child: ChildProcess;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  private tail: string[] = [];
  private partial = "";
  private readonly log: WriteStream;
  private hasExited = false;

  private constructor(argv: string[], options: { env: NodeJS.ProcessEnv; logFile: string; pipeStdin: boolean; pipeStdout: boolean }) {
    this.log = createWriteStream(options.logFile, { flags: "a" });
    this.log.write(`\n# ${new Date().toISOString()} start: ${argv.join(" ")}\n`);
    this.child = spawn(argv[0]!, argv.slice(1), {
      env: options.env,
      detached: true,
      stdio: [options.pipeStdin ? "pipe" : "ignore", "pipe", "pipe"],
    });
    if (!options.pipeStdout) this.child.stdout!.on("data", (chunk: Buffer) => this.record(chunk));
    this.child.stderr!.on("data", (chunk: Buffer) => this.record(chunk));
    this.exited = new Promise((resolve) => {
      this.child.once("error", (error) => {
        this.record(Buffer.from(`${error.message}\n`));
        this.hasExited = true;
        resolve("spawn-error");
      });
      this.child.once("exit", (code, signal) => {
        this.hasExited = true;
        resolve(code ?? signal ?? "unknown");
      });
    }).then((status) => {
      this.log.end(`# exited: ${status}\n`);
      return status as number | string;
    });
  }

  static async start(argv: string[], options: { env: NodeJS.ProcessEnv; logFile: string; pipeStdin?: boolean; pipeStdout?: boolean }): Promise<ManagedProcess> {
    await mkdir(dirname(options.logFile), { recursive: true });
    return new ManagedProcess(argv, { pipeStdin: false, pipeStdout: false, ...options });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return !this.hasExited;
  }

  /** Appends output to the log and keeps the last 50 lines. */
  record(chunk: Buffer): void {
    this.log.write(chunk);
    const text = this.partial + chunk.toString();
    const lines = text.split("\n");
    this.partial = lines.pop() ?? "";
    this.tail.push(...lines.filter((line) => line.trim() !== ""));
    if (this.tail.length > 50) this.tail = this.tail.slice(-50);
  }

  /** The line that best says why the program failed: its last error-looking line, else its last line. */
  failureLine(): string {
    const lines = [...this.tail, this.partial].filter((line) => line.trim() !== "");
    const errorLike = /error|exception|address already in use|not found|no module named|out of memory|traceback/i;
    const errorLines = lines.filter((line) => errorLike.test(line) && !/^\s*(File |Traceback)/.test(line));
    return (errorLines.at(-1) ?? lines.at(-1) ?? "(no output)").trim().slice(0, 500);
  }

  /** TERM to the whole group, KILL after `graceMs`; resolves once the process has exited. */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.hasExited) return;
    this.signalGroup("SIGTERM");
    const timer = setTimeout(() => this.signalGroup("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
    // Whatever the leader of the group left behind goes too.
    this.signalGroup("SIGKILL");
  }

  /** For tests and fault handling: kill the group at once, as the OOM killer would. */
  kill(): void {
    this.signalGroup("SIGKILL");
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is gone already.
    }
  }
}
