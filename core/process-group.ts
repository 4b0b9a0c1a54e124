import { spawn } from "node:child_process";
import { shellQuote } from "./shell-quote.ts";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { open, readFile, readdir } from "node:fs/promises";

/**
 * Starts a training command in its own session and process group (setsid), with output to
 * a log file and its exit code written to a file by a wrapper shell. Why a file: a worker
 * that restarts after a crash is no longer the parent of the run, so it cannot wait() for
 * it; the exit file (or its absence while the group is gone) tells it how the run ended.
 */
export interface LaunchedProcess {
  pid: number;
  /** Equal to pid: the process leads its own group. */
  pgid: number;
}

export interface LaunchOptions {
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  exitFile: string;
  /**
   * Words that confine the command (`bwrap ... --`, perhaps after `nsenter ... --`), put
   * before its shell. See `confinedShell` for how TERM still reaches the command there.
   */
  confine?: readonly string[];
  /** Open descriptors the command inherits as fd 3, 4, ... (a listening socket for a relay). */
  inheritFds?: readonly number[];
}

/**
 * The command's shell inside a confinement whose PID namespace ends with its first process
 * (bubblewrap: when its child exits, everything inside is killed). Two things keep the
 * group's signal semantics those of an unconfined run:
 * - bubblewrap starts with TERM, INT and HUP ignored, so a group-wide TERM does not kill
 *   it (with --die-with-parent its death would SIGKILL the command at once, with no time
 *   to save); `env --default-signal` gives the command back the default actions;
 * - after a TERM, the shell inside waits for every other process of the namespace (a
 *   trainer saving its checkpoint outlives the `sh -c` that started it, as it would
 *   outside), so the namespace ends when they do; KILL after the grace period ends all.
 */
function confinedShell(confine: readonly string[], command: string): string {
  const waitForOthers =
    'while :; do alive=; for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" = 1 ] || [ "$n" = $$ ] || { [ -e "$p/stat" ] && alive=1; }; done; [ -z "$alive" ] && break; sleep 0.1; done';
  const inner = `trap 'termed=1' TERM INT HUP; sh -c ${shellQuote(command)}; code=$?; if [ -n "$termed" ]; then ${waitForOthers}; fi; exit $code`;
  return `(trap '' TERM INT HUP; exec ${confine.map(shellQuote).join(" ")} env --default-signal=TERM,INT,HUP sh -c ${shellQuote(inner)})`;
}

export async function launchProcessGroup(options: LaunchOptions): Promise<LaunchedProcess> {
  const log = await open(options.logFile, "a");
  try {
    // The inner shell runs the command; the outer records its exit status even when the
    // command is killed by a signal (128 + signal number, as shells report it). The file
    // appears by rename, complete: its existence is what says the command has ended, so a
    // reader must never find it created but still empty.
    const exitFile = shellQuote(options.exitFile);
    const partial = shellQuote(`${options.exitFile}.partial`);
    // The wrapper traps TERM/INT/HUP so that a group-wide TERM (budget, cancel) reaches the
    // command, which may save and exit cleanly, while the wrapper lives on to record how it
    // ended; KILL after the grace period still ends everything.
    const run = options.confine?.length ? confinedShell(options.confine, options.command) : `sh -c ${shellQuote(options.command)}`;
    const wrapper = `trap : TERM INT HUP; ${run}; echo $? > ${partial} && mv -f ${partial} ${exitFile}`;
    const child = spawn("sh", ["-c", wrapper], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", log.fd, log.fd, ...(options.inheritFds ?? [])],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once("error", reject);
      child.once("spawn", () => resolve(child.pid!));
    });
    child.unref();
    return { pid, pgid: pid };
  } finally {
    await log.close();
  }
}

/**
 * True when no running process of this machine has `pid`: it does not exist, or it is a
 * zombie (ended, not yet reaped by whoever inherited it, as after its parent was killed
 * too). A pid another user owns exists; a reused pid reads as running.
 */
export function isProcessGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.charAt(stat.lastIndexOf(")") + 2) === "Z";
  } catch {
    return false;
  }
}

/** True while any process of the group is alive (signal 0 probes without killing; zombies do not count). */
export function isGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  // kill(0) also answers for zombies: members that ended but that nobody reaped (a container
  // whose init does not reap orphans). A group of zombies runs nothing; waiting on it would
  // spend the whole grace period (and the wait after KILL) on every stop.
  return hasLiveMember(pgid);
}

/** Whether a process of the group is not a zombie (/proc/<pid>/stat); true where /proc cannot say. */
function hasLiveMember(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return true;
  }
  let sawAny = false;
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    sawAny = true;
    // After the command name's last ')': state, ppid, pgrp, ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return !sawAny;
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * TERM to the whole group, then KILL after the grace period if anything is left, so a
 * budget kill leaves no orphans (children of children are in the same group).
 */
export async function terminateGroup(pgid: number, graceMs: number): Promise<"terminated" | "killed" | "gone"> {
  if (!signalGroup(pgid, "SIGTERM")) return "gone";
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isGroupAlive(pgid)) return "terminated";
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  signalGroup(pgid, "SIGKILL");
  for (let waited = 0; waited < 2000 && isGroupAlive(pgid); waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return "killed";
}

export interface ExitStatus {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /**
   * Set when how it ended cannot be known: no exit file (the wrapper died with the group, or
   * the run removed the file or its folder) or an empty one. Never guessed as a SIGKILL.
   */
  unknown?: string;
  /**
   * With `unknown`: the exit file's folder is there, so the wrapper (which survives TERM, INT
   * and HUP) would have written it had it lived: it was killed with its group. Without the
   * folder (the run removed logs/), nothing can be said.
   */
  groupKilled?: boolean;
}

const signalNames: Record<number, NodeJS.Signals> = { 1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 15: "SIGTERM", 11: "SIGSEGV" };

/**
 * How a finished group ended, from its exit file. Without one (the wrapper was killed with
 * its group, or the run deleted the file or its folder) or with an unreadable one, the end
 * is unknown: not a SIGKILL, which nobody may have sent.
 */
export async function readExitStatus(exitFile: string): Promise<ExitStatus> {
  let text: string;
  try {
    text = (await readFile(exitFile, "utf8")).trim();
  } catch {
    return existsSync(dirname(exitFile))
      ? {
          exitCode: null,
          signal: null,
          unknown: "no exit file beside the log: the process group was killed as a whole, its wrapper with it",
          groupKilled: true,
        }
      : { exitCode: null, signal: null, unknown: "no exit file and no folder for it: the run removed logs/" };
  }
  const code = Number(text);
  if (text === "" || !Number.isInteger(code))
    return { exitCode: null, signal: null, unknown: `the exit file holds no exit code (${JSON.stringify(text.slice(0, 40))})` };
  if (code > 128 && signalNames[code - 128]) return { exitCode: code, signal: signalNames[code - 128]! };
  return { exitCode: code, signal: null };
}

export interface TaggedProcess {
  pid: number;
  /** The command line, for the report (arguments joined by spaces, cut to 200 characters). */
  command: string;
  /** /proc/<pid>/stat start time, so a recycled pid is never signalled. */
  startTime: string | null;
}

function procStartTime(stat: string): string | null {
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return fields[19] ?? null;
}

/**
 * The live processes whose environment carries `name=value` (read from /proc/<pid>/environ):
 * how a run's processes are found after some left its process group and session (`setsid`,
 * daemonising launchers), since the environment is inherited across both. Empty where
 * /proc is absent; processes of other users are not readable and not found. Zombies have
 * no environment and are skipped. Linear in the number of processes.
 */
export async function findTaggedProcesses(name: string, value: string, exclude: readonly number[] = [process.pid]): Promise<TaggedProcess[]> {
  const needle = Buffer.from(`${name}=${value}\0`);
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return [];
  }
  const found: TaggedProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (exclude.includes(pid)) continue;
    try {
      const environ = await readFile(`/proc/${pid}/environ`);
      // Each variable ends with NUL; the first has no NUL before it.
      if (!(environ.subarray(0, needle.length).equals(needle) || environ.includes(Buffer.concat([Buffer.from("\0"), needle])))) continue;
      const stat = await readFile(`/proc/${pid}/stat`, "utf8");
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").filter(Boolean).join(" ");
      found.push({ pid, command: cmdline.slice(0, 200), startTime: procStartTime(stat) });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

/** Still the same live process: same start time, and not a zombie waiting for its parent. */
function sameProcess(target: TaggedProcess): boolean {
  try {
    const stat = readFileSync(`/proc/${target.pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X" && procStartTime(stat) === target.startTime;
  } catch {
    return false;
  }
}

function signalProcess(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** TERM to each process, KILL after the grace period to those left; says what each took. */
export async function terminateProcesses(
  processes: readonly TaggedProcess[],
  graceMs: number,
): Promise<Array<TaggedProcess & { outcome: "terminated" | "killed" | "gone" }>> {
  const outcome = new Map<number, "terminated" | "killed" | "gone">();
  for (const target of processes) {
    if (!sameProcess(target)) outcome.set(target.pid, "gone");
    else if (!signalProcess(target.pid, "SIGTERM")) outcome.set(target.pid, "gone");
  }
  const pending = () => processes.filter((target) => !outcome.has(target.pid) && sameProcess(target));
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && pending().length > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  for (const target of pending()) outcome.set(target.pid, signalProcess(target.pid, "SIGKILL") ? "killed" : "terminated");
  for (const target of processes) if (!outcome.has(target.pid)) outcome.set(target.pid, "terminated");
  return processes.map((target) => ({ ...target, outcome: outcome.get(target.pid)! }));
}

/** One variable of a live process's environment (/proc/<pid>/environ), or undefined. */
export function processEnvVariable(pid: number, name: string): string | undefined {
  try {
    const prefix = `${name}=`;
    for (const entry of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) if (entry.startsWith(prefix)) return entry.slice(prefix.length);
  } catch {
    // Gone, or not ours to read.
  }
  return undefined;
}
