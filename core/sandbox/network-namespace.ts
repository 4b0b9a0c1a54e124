import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/**
 * The network namespace of a sandboxed process group, as a file a later process can join
 * (`/proc/<pid>/ns/net` of a member whose namespace is not ours): how a swarm client
 * joins its server's loopback-only namespace. Read from /proc each time, so a worker
 * restarted after a crash finds it as well as the one that launched the group. Undefined
 * when no member is in another namespace (the group is gone, or not sandboxed).
 */
export function groupNetworkNamespace(pgid: number): string | undefined {
  let ours: string;
  let entries: string[];
  try {
    ours = readlinkSync("/proc/self/ns/net");
    entries = readdirSync("/proc");
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pgid || fields[0] === "Z") continue;
      if (readlinkSync(`/proc/${entry}/ns/net`) !== ours) return `/proc/${entry}/ns/net`;
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return undefined;
}
