import { A3rError } from "../../core/errors.ts";
import type { HostEntry, HostKind } from "../port/host-kind.ts";
import { localHostKind } from "../local/local-kind.ts";
import { queueHostKind } from "../queue/queue-kind.ts";
import { rayHostKind } from "../ray/ray-kind.ts";
import { slurmHostKind } from "../slurm/slurm-kind.ts";
import { sshHostKind } from "../ssh/ssh-kind.ts";

/**
 * The host kinds hosts.yaml may name, in the order its `kind` hint lists them. A new kind
 * is a folder of its own with a `<kind>-kind.ts` (the `HostKind` of port/host-kind.ts:
 * schema, capacity, check, launcher) and one line below; nothing else names a kind.
 */
const kinds = new Map<string, HostKind>();

/** Adds a kind (tests add throwaway ones); the function returned takes it out again. */
export function registerHostKind(kind: HostKind): () => void {
  if (kinds.has(kind.kind)) throw new Error(`host kind "${kind.kind}" is registered twice`);
  kinds.set(kind.kind, kind);
  return () => {
    if (kinds.get(kind.kind) === kind) kinds.delete(kind.kind);
  };
}

registerHostKind(localHostKind);
registerHostKind(sshHostKind);
registerHostKind(queueHostKind);
registerHostKind(slurmHostKind);
registerHostKind(rayHostKind);

/** Every registered kind, in registration order. */
export function hostKinds(): HostKind[] {
  return [...kinds.values()];
}

/** The kind of a loaded host. */
export function hostKindOf(host: Pick<HostEntry, "name" | "kind">): HostKind {
  const kind = kinds.get(host.kind);
  if (kind) return kind;
  throw new A3rError("CONFIG_INVALID", `host "${host.name}" is of kind "${host.kind}", which a3r has no host kind for`, {
    hint: `kind is ${kindList()}`,
  });
}

/** "local, ssh, queue, slurm or ray". */
export function kindList(): string {
  const names = hostKinds().map((kind) => kind.kind);
  return names.length < 2 ? (names[0] ?? "(none)") : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;
}
