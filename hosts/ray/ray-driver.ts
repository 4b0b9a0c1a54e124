import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { A3rError } from "../../core/errors.ts";
import { redactSecrets } from "../../core/redact.ts";

/**
 * The long-lived Python driver of a ray host (`ray_driver.py`, run with the host's python):
 * one JSON request per line on its stdin, one `@@a3r {...}` answer line on its stdout. It
 * connects to the cluster once; a driver that died (killed, the head restarted) is started
 * again by the next request, and finds the runs by their actors' names.
 */
export const driverScript = join(import.meta.dirname, "ray_driver.py");

export interface ActorView {
  /** Ray's actor state: DEPENDENCIES_UNREADY, PENDING_CREATION, ALIVE, RESTARTING, DEAD. */
  state: string;
  restarts: number;
  pid: number | null;
  death: string;
}

export interface RayNodeView {
  id: string;
  address: string;
  alive: boolean;
  cpus: number;
  gpus: number;
  free_cpus: number;
  free_gpus: number;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

export interface RayDriverOptions {
  host: string;
  python: string;
  address: string;
  namespace: string;
  /** How long connecting (ray.init) may take; default 90 s (a loaded machine is slow). */
  connectTimeoutMs?: number;
}

export class RayDriver {
  private child: ChildProcessWithoutNullStreams | undefined;
  private ready: Promise<void> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderrTail = "";

  constructor(private readonly options: RayDriverOptions) {}

  /** The driver's pid while it runs (tests kill it to play a dead driver). */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  private failure(what: string): A3rError {
    const said = redactSecrets(this.stderrTail.trim().split("\n").slice(-3).join(" | ")).slice(0, 400);
    return new A3rError("REMOTE_COMMAND_FAILED", `${this.options.host}: Ray driver for ${this.options.address} ${what}${said ? `: ${said}` : ""}`, {
      hint: `check that the Ray head answers at ${this.options.address} (ray status there) and that "${this.options.python}" imports ray of the cluster's version (a3r hosts check)`,
    });
  }

  private start(): Promise<void> {
    const { python, address, namespace } = this.options;
    this.stderrTail = "";
    const child = spawn(python, [driverScript, address, namespace], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, RAY_USAGE_STATS_ENABLED: "0" } });
    this.child = child;
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4000);
    });
    const ready = new Promise<void>((resolveReady, rejectReady) => {
      const timer = setTimeout(
        () => rejectReady(this.failure(`did not connect within ${(this.options.connectTimeoutMs ?? 90_000) / 1000} s`)),
        this.options.connectTimeoutMs ?? 90_000,
      );
      this.pending.set(0, { resolve: () => resolveReady(), reject: rejectReady, timer });
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      const answer = parseAnswer(line);
      const waiting = answer && this.pending.get(answer.id);
      if (!answer || !waiting) return;
      this.pending.delete(answer.id);
      clearTimeout(waiting.timer);
      if (answer.ok) waiting.resolve(answer.result);
      // Redacted: Ray's errors may quote a run's arguments, its environment among them.
      else
        waiting.reject(
          new A3rError("REMOTE_COMMAND_FAILED", `${this.options.host}: Ray at ${address}: ${redactSecrets(answer.error ?? "failed")}`, {
            hint: `the Ray head at ${address}`,
          }),
        );
    });
    const died = (why: string) => {
      if (this.child !== child) return;
      this.child = undefined;
      this.ready = undefined;
      for (const [id, waiting] of this.pending) {
        clearTimeout(waiting.timer);
        waiting.reject(this.failure(why));
        this.pending.delete(id);
      }
    };
    child.on("error", (error) => died(`could not start (${error.message})`));
    // "close", not "exit": the stderr it wrote last (why it gave up) is read by then.
    child.on("close", (code, signal) => died(`exited (${signal ?? `code ${code}`})`));
    child.stdin.on("error", () => undefined);
    return ready;
  }

  /** One request; the driver is (re)started first when it is not running. */
  async request<T>(op: string, args: Record<string, unknown> = {}, timeoutMs = 60_000): Promise<T> {
    this.ready ??= this.start();
    try {
      await this.ready;
    } catch (error) {
      this.ready = undefined;
      this.child?.kill("SIGKILL");
      throw error;
    }
    const child = this.child;
    // Died right after connecting: said once, not started again in a loop.
    if (!child) throw this.failure(`exited right after connecting, before ${op}`);
    const id = this.nextId++;
    return new Promise<T>((resolveAnswer, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(this.failure(`gave no answer to ${op} within ${timeoutMs / 1000} s (stopped; the next request starts a new driver)`));
        // Answers come in order: a driver stuck in a call to a dead or hung cluster would
        // hold every later request too. A new one re-checks the head first.
        if (this.child === child) child.kill("SIGKILL");
      }, timeoutMs);
      this.pending.set(id, { resolve: resolveAnswer as (value: unknown) => void, reject, timer });
      child.stdin.write(`${JSON.stringify({ id, op, args })}\n`);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise((resolveExit) => child.once("exit", resolveExit));
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

interface Answer {
  id: number;
  ok: boolean;
  result?: unknown;
  error?: string;
}

/** An `@@a3r {...}` line of the driver, or undefined for anything else Ray printed. */
function parseAnswer(line: string): Answer | undefined {
  if (!line.startsWith("@@a3r ")) return undefined;
  try {
    const value = JSON.parse(line.slice(6)) as Partial<Answer>;
    return typeof value.id === "number" && typeof value.ok === "boolean" ? (value as Answer) : undefined;
  } catch {
    return undefined;
  }
}
