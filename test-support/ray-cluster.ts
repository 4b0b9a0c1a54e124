import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { shellQuote } from "../core/shell-quote.ts";
import { venvMissing, venvPython } from "./python-venv.ts";

const run = promisify(execFile);

/**
 * A real single-node Ray cluster (`ray start --head`, Ray core, no dashboard) for one test
 * file, inside a network namespace of its own that has only loopback: Ray registers the
 * machine's interface address whatever `--node-ip-address` says, and in there that address
 * is 127.0.0.1. Whatever talks to Ray (the launcher's driver, and so the workers its actors
 * start) runs in the same namespace through `python`, a wrapper that enters it.
 *
 * ```ts
 * const ray = await startRayCluster({ cpus: 4, gpus: 2 });   // gpus: Ray resources only
 * // hosts.yaml: kind: ray, address: ray.address, python: ray.python
 * await ray.stop();   // every process of the namespace, by pid
 * ```
 *
 * Needs root (unshare -n), nsenter and ip, and the venv's ray; `rayMissing` says why not.
 */
export interface RayClusterHandle {
  /** The head's GCS address inside the namespace: 127.0.0.1:port. */
  address: string;
  /** A python command that runs the venv's python inside the namespace. */
  python: string;
  /** Ray's temp folder (short: Unix socket paths are limited to 107 bytes). */
  tempDir: string;
  cpus: number;
  gpus: number;
  /** Runs a command inside the namespace. */
  exec(command: string, args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** The pids of the processes in the namespace whose command line contains `text`. */
  pidsMatching(text: string): number[];
  stop(): Promise<void>;
}

function toolMissing(): string | undefined {
  if (process.getuid?.() !== 0) return "the Ray tests need root (they make a loopback-only network namespace with unshare -n)";
  for (const tool of ["unshare", "nsenter", "ip"]) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) return `${tool} is not installed (util-linux, iproute2)`;
  }
  const probe = spawnSync("unshare", ["-n", "true"]);
  if (probe.status !== 0) return `unshare -n is refused here: ${probe.stderr.toString().trim()}`;
  return undefined;
}

let missingChecked: { reason: string | undefined } | undefined;

/** Why a real Ray cannot run here, or undefined when it can. */
export function rayMissing(): string | undefined {
  missingChecked ??= { reason: venvMissing(["ray"]) ?? toolMissing() };
  return missingChecked.reason;
}

function namespaceOf(pid: number | string): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}

/** Every process in the network namespace `ns`, but `except`. */
function processesIn(ns: string, except: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === except) continue;
    if (namespaceOf(entry) === ns) pids.push(Number(entry));
  }
  return pids;
}

export async function startRayCluster(options: { cpus?: number; gpus?: number } = {}): Promise<RayClusterHandle> {
  const missing = rayMissing();
  if (missing) throw new Error(missing);
  const cpus = options.cpus ?? 4;
  const gpus = options.gpus ?? 0;
  // Short: Ray puts Unix sockets under <temp>/session_<date>_<pid>/sockets/.
  const tempDir = await mkdtemp("/tmp/ar-");
  // The namespace lives as long as this holder sleeps in it.
  const holder: ChildProcess = spawn("unshare", ["-n", "sleep", "2147483647"], { stdio: "ignore" });
  const own = namespaceOf(process.pid);
  const deadline = Date.now() + 10_000;
  while (namespaceOf(holder.pid!) === own || namespaceOf(holder.pid!) === undefined) {
    if (Date.now() > deadline || holder.exitCode !== null) {
      // The holder would otherwise sleep on, for ever, after the test.
      holder.kill("SIGKILL");
      await rm(tempDir, { recursive: true, force: true });
      throw new Error("unshare -n did not make a network namespace");
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 20));
  }
  const ns = namespaceOf(holder.pid!)!;
  const enter = ["--net=/proc/" + holder.pid + "/ns/net"];
  const exec = (command: string, args: string[]) => run("nsenter", [...enter, command, ...args], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  const stop = async () => {
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      for (const pid of processesIn(ns, holder.pid!)) {
        try {
          process.kill(pid, signal);
        } catch {
          // gone meanwhile
        }
      }
      const until = Date.now() + 5_000;
      while (processesIn(ns, holder.pid!).length > 0 && Date.now() < until) await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
    holder.kill("SIGKILL");
    await rm(tempDir, { recursive: true, force: true });
  };
  try {
    await exec("ip", ["link", "set", "lo", "up"]);
    const python = join(tempDir, "python");
    await writeFile(python, `#!/bin/sh\nexec nsenter ${enter.join(" ")} ${shellQuote(venvPython)} "$@"\n`);
    await chmod(python, 0o755);
    // Any port will do inside the namespace, which has nothing else listening.
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const ray = join(dirname(venvPython), "ray");
    if (!existsSync(ray)) throw new Error(`no ${ray} beside the venv's python`);
    await run(
      "nsenter",
      [
        ...enter,
        "env",
        "RAY_USAGE_STATS_ENABLED=0",
        ray,
        "start",
        "--head",
        `--port=${port}`,
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
        `--temp-dir=${tempDir}`,
        `--num-cpus=${cpus}`,
        `--num-gpus=${gpus}`,
        "--disable-usage-stats",
      ],
      { timeout: 120_000 },
    );
    return {
      address: `127.0.0.1:${port}`,
      python,
      tempDir,
      cpus,
      gpus,
      exec,
      pidsMatching: (text) =>
        processesIn(ns, holder.pid!).filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(text);
          } catch {
            return false;
          }
        }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
