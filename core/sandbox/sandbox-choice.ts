import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { A3rError } from "../errors.ts";

/**
 * Whether a run's commands execute inside bubblewrap, decided once per run from what the
 * host (hosts.yaml `sandbox:`, given to the worker as `--sandbox` or `A3R_SANDBOX`) and
 * the blueprint (front matter `sandbox:`) ask for, and from a probe of bubblewrap here:
 *
 * | asked | bwrap works | decision |
 * | --- | --- | --- |
 * | nothing (the default) | yes | bwrap |
 * | nothing | no (missing, or user namespaces forbidden) | none, with the reason (a warning) |
 * | bwrap (host or blueprint) | no | refused: SANDBOX_UNAVAILABLE, naming who asked and why it cannot |
 * | none (host or blueprint) | - | none |
 * | host bwrap, blueprint none | - | refused: a blueprint cannot lift its host's sandbox |
 *
 * Left out: what the sandbox lets a run see (bwrap-command.ts, worker/launch/sandbox-plan.ts).
 */
export type SandboxMode = "bwrap" | "none";

export const sandboxModes: readonly SandboxMode[] = ["bwrap", "none"];

export interface SandboxRequest {
  /** hosts.yaml's `sandbox:` for the host running the worker, when it says. */
  host?: SandboxMode;
  /** The blueprint's front matter `sandbox:`, when it says. */
  blueprint?: SandboxMode;
}

export interface SandboxDecision {
  mode: SandboxMode;
  /** The bubblewrap binary (mode bwrap). */
  binary?: string;
  /** Why this mode, in one sentence, for status.json, result.md and the report. */
  why: string;
  /** True when the default (bwrap) could not be had and the run goes unconfined. */
  fellBack: boolean;
}

/**
 * The bubblewrap binary: `A3R_BWRAP` when set (a path; how a test or an operator points at
 * another one), else `bwrap` on PATH, else /usr/bin/bwrap. Undefined when none is there.
 */
export function findBwrap(env: NodeJS.ProcessEnv): { binary?: string; looked: string } {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (env.A3R_BWRAP) {
    const path = env.A3R_BWRAP;
    return { looked: `A3R_BWRAP=${path}`, ...(isAbsolute(path) && executable(path) ? { binary: path } : {}) };
  }
  for (const folder of (env.PATH ?? "").split(delimiter).filter(isAbsolute)) {
    if (executable(join(folder, "bwrap"))) return { binary: join(folder, "bwrap"), looked: "PATH" };
  }
  return { looked: "PATH and /usr/bin", ...(executable("/usr/bin/bwrap") ? { binary: "/usr/bin/bwrap" } : {}) };
}

const probes = new Map<string, string | null>();

/**
 * Why bubblewrap cannot confine a process here, or null when it can: it runs, with the
 * namespaces a run gets (containers often forbid user or network namespaces), the
 * `env --default-signal` a confined command starts through (core/process-group.ts; GNU
 * coreutils 8.31 or later). Run once per binary and process.
 */
export function bwrapProbeFailure(binary: string): string | null {
  const known = probes.get(binary);
  if (known !== undefined) return known;
  const probe = spawnSync(
    binary,
    [
      "--ro-bind",
      "/",
      "/",
      "--dev",
      "/dev",
      "--proc",
      "/proc",
      "--unshare-net",
      "--unshare-pid",
      "--cap-drop",
      "ALL",
      "--die-with-parent",
      "env",
      "--default-signal=TERM",
      "true",
    ],
    { encoding: "utf8", timeout: 15_000 },
  );
  const failure =
    probe.error !== undefined
      ? probe.error.message
      : probe.status === 0
        ? null
        : `exit ${probe.status ?? probe.signal}: ${(probe.stderr ?? "").trim().split("\n")[0]?.slice(0, 200) || "no message"}`;
  probes.set(binary, failure);
  return failure;
}

/** The sandbox a run gets; throws SANDBOX_UNAVAILABLE or BLUEPRINT_INVALID when it must not start. */
export function chooseSandbox(request: SandboxRequest, env: NodeJS.ProcessEnv): SandboxDecision {
  if (request.host === "bwrap" && request.blueprint === "none")
    throw new A3rError("BLUEPRINT_INVALID", "the blueprint says sandbox: none, but its host requires the sandbox (hosts.yaml sandbox: bwrap)", {
      where: "sandbox",
      hint: "remove sandbox: none from the blueprint, or run it on a host whose hosts.yaml entry says sandbox: none",
    });
  const asked = request.blueprint ?? request.host;
  const who = request.blueprint !== undefined ? "the blueprint's front matter" : "the host's setting (hosts.yaml sandbox:, --sandbox or A3R_SANDBOX)";
  if (asked === "none") return { mode: "none", why: `sandbox: none in ${who}: the run's commands are not confined`, fellBack: false };
  const found = findBwrap(env);
  const failure = found.binary ? bwrapProbeFailure(found.binary) : `no bwrap executable found (looked in ${found.looked})`;
  if (failure === null) return { mode: "bwrap", binary: found.binary!, why: `bubblewrap (${found.binary})`, fellBack: false };
  const cannot = found.binary ? `bubblewrap (${found.binary}) cannot create its namespaces here: ${failure}` : failure;
  if (asked === "bwrap")
    throw new A3rError("SANDBOX_UNAVAILABLE", `sandbox: bwrap in ${who}, but ${cannot}`, {
      where: "sandbox",
      hint: "install bubblewrap (Debian: apt-get install bubblewrap) and allow user namespaces (sysctl kernel.unprivileged_userns_clone=1, or a container run with them), or say sandbox: none",
    });
  return { mode: "none", why: `${cannot}; running unconfined (the default falls back; say sandbox: bwrap to refuse instead)`, fellBack: true };
}

/** A setting's value checked: "bwrap", "none" or absent; anything else names where it came from. */
export function parseSandboxMode(value: unknown, where: string): SandboxMode | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (value === "bwrap" || value === "none") return value;
  throw new A3rError("CONFIG_INVALID", `${where} is ${JSON.stringify(value).slice(0, 60)}, not bwrap or none`, {
    where,
    hint: "say sandbox: bwrap or sandbox: none",
  });
}
