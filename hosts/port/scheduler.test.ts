import { describe, expect, it } from "vitest";
import { scheduleBlueprints, type HostCapacity, type HostLoad, type SchedulingRequest } from "./scheduler.ts";

/** Small seeded generator so property runs are reproducible. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function generateCase(seed: number): { hosts: HostCapacity[]; load: Record<string, HostLoad>; requests: SchedulingRequest[] } {
  const next = random(seed);
  const hosts: HostCapacity[] = Array.from({ length: 1 + Math.floor(next() * 4) }, (_, index) => {
    const gpuCount = Math.floor(next() * 9);
    return { name: `host-${index}`, gpuIndices: Array.from({ length: gpuCount }, (_, gpu) => gpu), maxRuns: 1 + Math.floor(next() * 6) };
  });
  const load: Record<string, HostLoad> = {};
  for (const host of hosts) {
    const busyGpus = host.gpuIndices.filter(() => next() < 0.3);
    load[host.name] = { busyGpus, runs: Math.min(host.maxRuns, busyGpus.length) };
  }
  const requests = Array.from({ length: Math.floor(next() * 20) }, (_, index) => ({ blueprintId: `bp-${index % 17}`, gpus: Math.floor(next() * 5) }));
  return { hosts, load, requests };
}

describe("scheduleBlueprints", () => {
  it("spreads runs over hosts with the most free GPUs", () => {
    const hosts = [
      { name: "a", gpuIndices: [0, 1, 2, 3], maxRuns: 4 },
      { name: "b", gpuIndices: [0, 1, 2, 3], maxRuns: 4 },
    ];
    const result = scheduleBlueprints(hosts, {}, [
      { blueprintId: "x", gpus: 1 },
      { blueprintId: "y", gpus: 1 },
      { blueprintId: "z", gpus: 2 },
    ]);
    expect(result.assignments).toEqual([
      { blueprintId: "x", host: "a", gpuIndices: [0] },
      { blueprintId: "y", host: "b", gpuIndices: [0] },
      { blueprintId: "z", host: "a", gpuIndices: [1, 2] },
    ]);
  });

  it("lets small blueprints pass a big one that must wait", () => {
    const hosts = [{ name: "a", gpuIndices: [0, 1], maxRuns: 4 }];
    const result = scheduleBlueprints(hosts, { a: { busyGpus: [0], runs: 1 } }, [
      { blueprintId: "big", gpus: 2 },
      { blueprintId: "small", gpus: 1 },
    ]);
    expect(result.waiting).toEqual(["big"]);
    expect(result.assignments).toEqual([{ blueprintId: "small", host: "a", gpuIndices: [1] }]);
  });

  it("says why a blueprint can never run", () => {
    const result = scheduleBlueprints([{ name: "a", gpuIndices: [0], maxRuns: 2 }], {}, [{ blueprintId: "huge", gpus: 8 }]);
    expect(result.unschedulable).toEqual([{ blueprintId: "huge", reason: "needs 8 GPU(s) on one host; the largest host has 1" }]);
  });

  it("runs CPU-only blueprints within the run slots", () => {
    const result = scheduleBlueprints([{ name: "local", gpuIndices: [], maxRuns: 2 }], {}, [
      { blueprintId: "a", gpus: 0 },
      { blueprintId: "b", gpus: 0 },
      { blueprintId: "c", gpus: 0 },
    ]);
    expect(result.assignments.map((assignment) => assignment.blueprintId)).toEqual(["a", "b"]);
    expect(result.waiting).toEqual(["c"]);
  });

  it("holds its invariants on 500 generated cases: no slot twice, no blueprint lost, deterministic", () => {
    for (let seed = 1; seed <= 500; seed += 1) {
      const { hosts, load, requests } = generateCase(seed);
      const result = scheduleBlueprints(hosts, load, requests);
      expect(scheduleBlueprints(hosts, load, requests)).toEqual(result);

      const uniqueIds = [...new Set(requests.map((request) => request.blueprintId))];
      const accounted = [...result.assignments.map((a) => a.blueprintId), ...result.waiting, ...result.unschedulable.map((u) => u.blueprintId)];
      expect(accounted.sort()).toEqual(uniqueIds.sort());

      for (const host of hosts) {
        const placed = result.assignments.filter((assignment) => assignment.host === host.name);
        const used = [...load[host.name]!.busyGpus, ...placed.flatMap((assignment) => assignment.gpuIndices)];
        expect(new Set(used).size).toBe(used.length);
        expect(used.every((gpu) => host.gpuIndices.includes(gpu))).toBe(true);
        expect(load[host.name]!.runs + placed.length).toBeLessThanOrEqual(host.maxRuns);
      }
      for (const assignment of result.assignments) {
        const wanted = requests.find((request) => request.blueprintId === assignment.blueprintId)!.gpus;
        expect(assignment.gpuIndices.length).toBe(wanted);
      }
    }
  });
});
