/**
 * Puts blueprints on GPU slots across hosts. Pure and deterministic: the same hosts, busy
 * slots and blueprints always give the same assignment, so a leader re-run after a crash
 * makes the same choices.
 *
 * Rules: a blueprint needs `gpus` whole GPUs on ONE host (0 = CPU only) and one run slot;
 * a host never gets more runs than `maxRuns` nor a GPU index twice; among hosts that fit,
 * the one with the most free GPUs (then most free run slots, then name) wins, which
 * spreads load; blueprints are taken in the order given (the caller's priority), and one
 * that does not fit now waits without blocking smaller ones behind it.
 */
export interface HostCapacity {
  name: string;
  /** GPU indices this host offers, e.g. [0, 1, 2, 3]. */
  gpuIndices: number[];
  /** Most concurrent runs on this host (CPU-only runs count too). */
  maxRuns: number;
}

export interface HostLoad {
  /** GPU indices in use by runs already placed. */
  busyGpus: number[];
  runs: number;
}

export interface SchedulingRequest {
  blueprintId: string;
  gpus: number;
}

export interface Assignment {
  blueprintId: string;
  host: string;
  gpuIndices: number[];
}

export interface SchedulingResult {
  assignments: Assignment[];
  /** Fit on some host but not now: try again when slots free up. */
  waiting: string[];
  /** Fit on no host at all, with the reason. */
  unschedulable: Array<{ blueprintId: string; reason: string }>;
}

export function scheduleBlueprints(hosts: HostCapacity[], load: Record<string, HostLoad>, requests: SchedulingRequest[]): SchedulingResult {
  const state = new Map(
    [...hosts]
      .sort((left, right) => left.name.localeCompare(right.name))
      .map((host) => {
        const current = load[host.name] ?? { busyGpus: [], runs: 0 };
        const busy = new Set(current.busyGpus);
        return [host.name, { host, free: host.gpuIndices.filter((index) => !busy.has(index)).sort((a, b) => a - b), runs: current.runs }];
      }),
  );
  const largestHost = Math.max(0, ...hosts.map((host) => host.gpuIndices.length));
  const result: SchedulingResult = { assignments: [], waiting: [], unschedulable: [] };
  const seen = new Set<string>();
  for (const request of requests) {
    if (seen.has(request.blueprintId)) continue; // one run per blueprint id, ever
    seen.add(request.blueprintId);
    if (!Number.isInteger(request.gpus) || request.gpus < 0) {
      result.unschedulable.push({ blueprintId: request.blueprintId, reason: `gpus must be a whole number >= 0, got ${request.gpus}` });
      continue;
    }
    if (request.gpus > largestHost || hosts.every((host) => host.maxRuns < 1)) {
      result.unschedulable.push({
        blueprintId: request.blueprintId,
        reason: `needs ${request.gpus} GPU(s) on one host; the largest host has ${largestHost}`,
      });
      continue;
    }
    let best: { name: string; free: number[]; runs: number; host: HostCapacity } | undefined;
    for (const [name, entry] of state) {
      if (entry.runs >= entry.host.maxRuns || entry.free.length < request.gpus) continue;
      const better =
        !best ||
        entry.free.length > best.free.length ||
        (entry.free.length === best.free.length && entry.host.maxRuns - entry.runs > best.host.maxRuns - best.runs);
      if (better) best = { name, ...entry };
    }
    if (!best) {
      result.waiting.push(request.blueprintId);
      continue;
    }
    const entry = state.get(best.name)!;
    const gpuIndices = entry.free.slice(0, request.gpus);
    entry.free = entry.free.slice(request.gpus);
    entry.runs += 1;
    result.assignments.push({ blueprintId: request.blueprintId, host: best.name, gpuIndices });
  }
  return result;
}
