import { isAbsolute, relative, resolve, sep } from "node:path";

/**
 * The bubblewrap command line that confines one process tree: the root file system
 * read-only, a private /tmp, a minimal /dev (plus the GPUs), a fresh /proc, no
 * capabilities, its own PID namespace (so that everything it starts dies with it), and a
 * network limited to what the run needs. Pure: the caller says what exists (GPU devices,
 * credential paths) and what the run may see; `bwrapArguments` only orders the mounts.
 *
 * The order of mounts matters: bubblewrap applies them in order, so the hidden folders
 * (home, /tmp, the sibling result directories) are covered by empty tmpfs first, the paths
 * the run needs are bound back on top of them, and the credentials inside those paths are
 * covered last.
 *
 * Left out: seccomp filters and user-id mapping (a run keeps its uid; a root run keeps uid
 * 0 but loses every capability, so the read-only mounts hold), and joining a network
 * namespace (the caller prefixes `nsenter`, see `joinNetworkPrefix`).
 */
export interface SandboxSpec {
  /** Paths the run may write (its result directory). Bound read-write. */
  writable: readonly string[];
  /** Paths the run must see though they lie under a hidden folder (codebase, interpreter, a3r). Bound read-only. */
  readable: readonly string[];
  /** Folders replaced by an empty tmpfs: the home folder, the folder of sibling result directories. */
  hidden: readonly string[];
  /** Credential folders covered by an empty tmpfs wherever a bound path would show them. */
  secretDirs: readonly string[];
  /** Credential files covered by /dev/null wherever a bound path would show them. */
  secretFiles: readonly string[];
  /** GPU and other device nodes bound into the minimal /dev (`/dev/nvidia*` where present). */
  devices: readonly string[];
  /**
   * "none": a namespace of its own with only loopback (bubblewrap brings `lo` up);
   * "shared": the caller's namespace (a swarm client joined to its server's, or a run
   * whose blueprint asks for the network).
   */
  network: "none" | "shared";
}

/** True when `inner` is `outer` or lies under it. */
export function isWithin(inner: string, outer: string): boolean {
  const path = relative(resolve(outer), resolve(inner));
  return path === "" || (!path.startsWith(`..${sep}`) && path !== ".." && !isAbsolute(path));
}

/** Parents before children, no duplicates: a child bound before its parent would be covered by it. */
function ordered(paths: readonly string[]): string[] {
  return [...new Set(paths.map((path) => resolve(path)))].sort((a, b) => a.split(sep).length - b.split(sep).length || a.localeCompare(b));
}

/** The arguments after `bwrap` and before the command. */
export function bwrapArguments(spec: SandboxSpec): string[] {
  // /tmp and /dev/shm private and writable by everyone, as on a host (torch and NCCL use /dev/shm).
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"];
  // A folder inside a path the run writes is the run's own: not hidden.
  const hidden = ordered(spec.hidden).filter((folder) => folder !== "/" && !spec.writable.some((path) => isWithin(folder, path)));
  for (const folder of hidden) args.push("--tmpfs", folder);
  const underHidden = (path: string) => isWithin(path, "/tmp") || hidden.some((folder) => isWithin(path, folder));
  const bound: string[] = [];
  for (const path of ordered(spec.readable)) {
    if (!underHidden(path) || spec.writable.some((writable) => isWithin(path, writable))) continue;
    args.push("--ro-bind", path, path);
    bound.push(path);
  }
  // A hidden folder inside a folder bound back (sibling results inside the codebase) is hidden again.
  for (const folder of hidden) if (bound.some((path) => path !== folder && isWithin(folder, path))) args.push("--tmpfs", folder);
  for (const path of ordered(spec.writable)) {
    args.push("--bind", path, path);
    bound.push(path);
  }
  // A bound path may itself hold credentials (a codebase that is the home folder): cover them again.
  const visible = (path: string) => !underHidden(path) || bound.some((folder) => isWithin(path, folder));
  for (const dir of ordered(spec.secretDirs)) if (visible(dir)) args.push("--tmpfs", dir);
  for (const file of ordered(spec.secretFiles)) if (visible(file)) args.push("--ro-bind", "/dev/null", file);
  for (const device of spec.devices) args.push("--dev-bind", device, device);
  if (spec.network === "none") args.push("--unshare-net");
  // No capabilities (a root run cannot remount / read-write), its own PID namespace and
  // --die-with-parent: when the worker's group is killed, bubblewrap's init dies and the
  // kernel ends every process inside, even one that left the process group (setsid).
  args.push("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--die-with-parent");
  return args;
}

/**
 * The words that put a process into the network namespace of `namespaceFile`
 * (`/proc/<pid>/ns/net` of a sandboxed swarm server), before bubblewrap. As root it joins
 * the namespace alone; otherwise the namespace belongs to bubblewrap's user namespace,
 * which must be joined with it.
 */
export function joinNetworkPrefix(namespaceFile: string, asRoot: boolean): string[] {
  if (asRoot) return ["nsenter", `--net=${namespaceFile}`, "--"];
  const user = namespaceFile.replace(/\/net$/, "/user");
  return ["nsenter", `--user=${user}`, `--net=${namespaceFile}`, "--preserve-credentials", "--"];
}
