import { isA3rError } from "../../core/errors.ts";
import { hostKindOf } from "../kinds/registry.ts";
import type { HostConfig } from "../kinds/hosts-config.ts";
import type { CheckHostOptions, HostCheck } from "../port/host-kind.ts";

export type { CheckHostOptions, HostCheck } from "../port/host-kind.ts";

/**
 * One row of `a3r hosts check`: can a3r use this host right now? The host's kind fills it
 * (`check` of its `HostKind`, kinds/registry.ts); every probe has a timeout, so an
 * unreachable host is a row with the reason, never a hang, and a refused host key says so.
 *
 * Left out: whether the blueprints' codebases and environments exist there (the worker's
 * prepare step checks them per run).
 */
export async function checkHost(host: HostConfig, options: CheckHostOptions = {}): Promise<HostCheck> {
  const row: HostCheck = {
    name: host.name,
    kind: host.kind,
    ok: false,
    reachable: "no",
    hostKey: "-",
    a3r: "-",
    gpus: "-",
    gpuCount: null,
    freeDisk: "-",
    problems: [],
  };
  try {
    await hostKindOf(host).check(host, row, options);
  } catch (error) {
    if (isA3rError(error)) {
      if (error.code === "HOST_KEY_MISMATCH" || error.code === "HOST_KEY_UNKNOWN") {
        row.reachable = "yes";
        row.hostKey = `REFUSED ${String(error.details?.fingerprint ?? "")}`;
      }
      row.problems.push(`${error.code}: ${error.message}${error.hint ? ` (${error.hint})` : ""}`);
    } else {
      row.problems.push(error instanceof Error ? error.message : String(error));
    }
  }
  return row;
}
