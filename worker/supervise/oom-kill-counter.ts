import { readFileSync } from "node:fs";

/**
 * How many processes the kernel's OOM killer has killed since boot (`oom_kill` in
 * /proc/vmstat, Linux 4.13+), or null where that is not readable. The worker compares it
 * before and after an attempt: a SIGKILL with an unchanged count was sent by someone else.
 * The counter is machine-wide, so a kill elsewhere reads as "seen": the safe direction.
 */
export function readOomKillCount(path = "/proc/vmstat"): number | null {
  try {
    const match = /^oom_kill (\d+)$/m.exec(readFileSync(path, "utf8"));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

export function oomKillerFact(before: number | null, after: number | null): "seen" | "not_seen" | undefined {
  if (before === null || after === null) return undefined;
  return after > before ? "seen" : "not_seen";
}
