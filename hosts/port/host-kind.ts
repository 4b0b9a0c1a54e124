import { isAbsolute, join } from "node:path";
import { z } from "zod";
import { checkoutRoot } from "../../core/checkout-root.ts";
import { formatBytes, type ProbeResult } from "./host-probe.ts";
import type { Launcher } from "./launcher.ts";
import type { HostCapacity } from "./scheduler.ts";

/**
 * The host-kind plug-in contract: everything a3r does with a `kind:` of hosts.yaml, said by
 * the kind itself in its own folder (`local/local-kind.ts`, `ssh/ssh-kind.ts`,
 * `queue/queue-kind.ts`, `slurm/slurm-kind.ts`) and listed once in `kinds/registry.ts`.
 * The loader (`kinds/hosts-config.ts`), the dispatcher's capacity (`dispatch/host-capacity.ts`),
 * `a3r hosts check` (`check/host-check.ts`) and `openLauncher` (`kinds/open-launcher.ts`)
 * ask the registry and know no kind by name.
 *
 * Left out: kinds loaded from outside the checkout (a kind is code of a3r, reviewed like any).
 */

/** What every hosts.yaml entry has, whatever its kind. */
export interface HostEntry {
  name: string;
  kind: string;
  max_runs?: number | undefined;
}

/**
 * A host after loading (defaults filled, `~` expanded, aliases resolved): what a kind's
 * launcher, capacity and check get. `HostConfig` (kinds/hosts-config.ts) is the same with
 * the built-in kinds' own types.
 */
export type LoadedHost = HostEntry & { readonly [field: string]: unknown };

/** How launchers are opened. */
export interface OpenLauncherOptions {
  /** How long an ssh host may stay unreachable before a command fails; default 60 s. */
  reconnectForMs?: number;
  /** Connect now (dispatch), so an unreachable host is refused at once with its reason; default: on first use. */
  connect?: boolean;
}

/** One row of `a3r hosts check`: can a3r use this host right now? */
export interface HostCheck {
  name: string;
  kind: string;
  ok: boolean;
  reachable: string;
  hostKey: string;
  a3r: string;
  gpus: string;
  gpuCount: number | null;
  freeDisk: string;
  problems: string[];
}

export interface CheckHostOptions {
  /** Slurm hosts: also submit a trivial job and wait for it to end (`sbatch --wait`). */
  submitJob?: boolean;
}

/** Throws CONFIG_INVALID at the line of a field of the entry being checked (`[]`: the entry itself). */
export type EntryProblem = (field: string, message: string, hint: string) => never;

/** What loading an entry may read besides the entry. */
export interface ResolveContext {
  home: string;
  /** Every entry of the file, as parsed (a slurm host finds its login node's here). */
  entries: readonly HostEntry[];
  /** The OpenSSH client config the file names (or ~/.ssh/config), read on first use; "" when missing. */
  sshConfigText(): Promise<string>;
}

/**
 * One host kind. Methods are called with the kind's own entry and config (the registry
 * routes by `kind`), so a kind narrows nothing.
 */
export interface HostKind<Entry extends HostEntry = HostEntry, Config extends LoadedHost = LoadedHost> {
  /** The `kind:` value in hosts.yaml. */
  readonly kind: string;
  /** Its hosts.yaml entry: a `z.strictObject` with `kind: z.literal(<kind>)`; its messages are the file's. */
  readonly schema: z.ZodObject;
  /** The hint for a schema error at `field` of such an entry; undefined = the common ones. */
  hint?(field: string, path: readonly PropertyKey[]): string | undefined;
  /** Rules within the entry beyond its schema, checked in file order with the duplicate names. */
  checkEntry?(entry: Entry, problem: EntryProblem): void;
  /** Rules about other entries it names, checked once every entry is known. */
  checkReferences?(entry: Entry, entries: readonly HostEntry[], problem: EntryProblem): void;
  /** Names of other entries this one uses that are therefore no hosts of their own (a login node). */
  claims?(entry: Entry): string[];
  /** The loaded config: defaults filled, `~` expanded, aliases resolved. */
  resolve(entry: Entry, context: ResolveContext): Config | Promise<Config>;
  /** Its launcher; heavy clients (ssh2, BullMQ) are imported here, when a host of the kind is opened. */
  openLauncher(host: Config, options: OpenLauncherOptions): Promise<Launcher>;
  /** Its slots for the scheduler, asked once the launcher is open. */
  capacity(host: Config, launcher: Launcher): Promise<HostCapacity>;
  /** Fills `a3r hosts check`'s row (reachable, host key, a3r, GPUs, disk, ok, problems); an error it throws becomes a problem of the row. */
  check(host: Config, row: HostCheck, options: CheckHostOptions): Promise<void>;
}

/** A kind with its own types, as the registry keeps it. */
export function defineHostKind<Entry extends HostEntry, Config extends LoadedHost>(kind: HostKind<Entry, Config>): HostKind {
  return kind as unknown as HostKind;
}

// Fields several kinds share.

export const hostNameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, "letters, digits, '.', '_' and '-', starting with a letter or digit");
export const gpusSchema = z.union([z.literal("detect"), z.number().int().min(0).max(1024)]);
export const absolutePathSchema = z
  .string()
  .min(1)
  .refine((path) => isAbsolute(path) || path.startsWith("~/"), "must be an absolute path (or start with ~/)");

/** The command that runs a3r on the host when hosts.yaml does not say. */
export const defaultA3rCommand = "a3r";

/**
 * A host on this machine's default: the a3r that is running now (this node, this checkout's
 * entry), not whatever `a3r` PATH finds (only npx puts one there; `node bin/a3r.js research`
 * had every run lost to `exec: a3r: not found`).
 */
export function runningA3rCommand(): string {
  return `${process.execPath} ${join(checkoutRoot, "bin", "a3r.js")}`;
}

export function expandHome(path: string, home: string): string {
  return path === "~" ? home : path.startsWith("~/") ? `${home}/${path.slice(2)}` : path;
}

/** GPU indices 0..n-1 and at most `max_runs` runs (default one per GPU, at least one). */
export function slotsOf(host: HostEntry, gpuCount: number, runsWithoutLimit = Math.max(gpuCount, 1)): HostCapacity {
  return { name: host.name, gpuIndices: Array.from({ length: gpuCount }, (_, index) => index), maxRuns: host.max_runs ?? runsWithoutLimit };
}

/** A check row's a3r, GPU and disk columns from a probe (local and ssh hosts). */
export function applyProbe(row: HostCheck, host: { a3r: string; gpus: "detect" | number }, probe: ProbeResult): void {
  row.a3r = probe.a3r.ok ? `yes (${probe.a3r.detail.slice(0, 30)})` : "no";
  if (!probe.a3r.ok) row.problems.push(`"${host.a3r} --version" failed: ${probe.a3r.detail || "no output"}`);
  row.gpuCount = host.gpus === "detect" ? probe.gpus.length : host.gpus;
  row.gpus = host.gpus === "detect" ? probe.gpuDetail : `${host.gpus} (configured; found ${probe.gpuDetail})`;
  row.freeDisk = formatBytes(probe.freeDiskBytes);
  row.ok = probe.a3r.ok;
}
