import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { readBlueprintFile } from "../blueprints/index.ts";
import { A3rError } from "../core/errors.ts";
import { writeFixtureBlueprint } from "../test-support/fixture-blueprint.ts";
import { checkHost } from "./check/host-check.ts";
import { dispatchBlueprints } from "./dispatch/dispatcher.ts";
import { openDispatchHosts } from "./dispatch/open-dispatch-hosts.ts";
import { defineHostKind, hostNameSchema, slotsOf } from "./port/host-kind.ts";
import type { LaunchRequest, Launcher, RunProgress, RunRef } from "./port/launcher.ts";
import { loadHostsFile, parseHostsText } from "./kinds/hosts-config.ts";
import { openLauncher } from "./kinds/open-launcher.ts";
import { hostKindOf, hostKinds, registerHostKind } from "./kinds/registry.ts";

// A throwaway kind, defined here the way a kind's own folder would: its schema, a rule of
// its own, its capacity, its check and its launcher. Nothing else in hosts/ is told about it.
const memorySchema = z.strictObject({
  name: hostNameSchema,
  kind: z.literal("memory"),
  slots: z.number().int().min(1),
  shelf: z.string().min(1).optional(),
  max_runs: z.number().int().min(1).optional(),
});
type MemoryEntry = z.infer<typeof memorySchema>;
type MemoryConfig = MemoryEntry & { shelf: string };

class MemoryLauncher implements Launcher {
  readonly kind = "memory";
  readonly launches: LaunchRequest[] = [];
  closed = false;
  constructor(readonly host: string) {}
  async launch(request: LaunchRequest) {
    const started = !this.launches.some((launch) => launch.blueprintId === request.blueprintId);
    if (started) this.launches.push(request);
    return { ref: { campaign: request.campaign, blueprintId: request.blueprintId }, host: this.host, started, pgid: null };
  }
  async poll(ref: RunRef): Promise<RunProgress> {
    const launched = this.launches.find((launch) => launch.blueprintId === ref.blueprintId);
    return {
      ref,
      host: this.host,
      state: launched ? "launching" : "unknown",
      finished: false,
      step: null,
      lastMetrics: null,
      heartbeatAt: null,
      startedAt: null,
      reason: null,
      gpuIndices: launched?.gpuIndices ?? [],
      metricsTail: [],
    };
  }
  async pollMany(refs: RunRef[]) {
    return Promise.all(refs.map((ref) => this.poll(ref)));
  }
  async fetch() {
    return { files: [], complete: false };
  }
  async cancel() {
    return false;
  }
  async list() {
    return this.launches.map((launch) => ({ campaign: launch.campaign, blueprintId: launch.blueprintId }));
  }
  async close() {
    this.closed = true;
  }
}

const opened: MemoryLauncher[] = [];
const memoryKind = defineHostKind<MemoryEntry, MemoryConfig>({
  kind: "memory",
  schema: memorySchema,
  hint: (field) => (field === "slots" ? "slots is how many runs the shelf holds" : undefined),
  checkEntry: (entry, problem) => {
    if (entry.shelf === "forbidden") problem("shelf", `host "${entry.name}" names the forbidden shelf`, "name another shelf");
  },
  resolve: (entry) => ({ ...entry, shelf: entry.shelf ?? "default" }),
  openLauncher: async (host) => {
    const launcher = new MemoryLauncher(host.name);
    opened.push(launcher);
    return launcher;
  },
  capacity: async (host) => slotsOf(host, host.slots),
  check: async (host, row) => {
    row.reachable = `yes (shelf ${host.shelf})`;
    row.gpus = String(host.slots);
    row.gpuCount = host.slots;
    row.ok = true;
  },
});

function errorOf(action: () => unknown): A3rError {
  try {
    action();
  } catch (error) {
    if (error instanceof A3rError) return error;
    throw error;
  }
  throw new Error("expected an A3rError");
}

describe("a host kind registered from outside hosts/", () => {
  let unregister: () => void;
  let folder: string;
  beforeEach(async () => {
    unregister = registerHostKind(memoryKind);
    folder = await mkdtemp(join(tmpdir(), "a3r-host-kind-"));
  });
  afterEach(async () => {
    unregister();
    opened.length = 0;
    await rm(folder, { recursive: true, force: true });
  });

  it("is parsed from hosts.yaml beside the built-in kinds, with its schema, its hints and its own rules", () => {
    expect(hostKinds().map((kind) => kind.kind)).toEqual(["local", "ssh", "queue", "slurm", "ray", "memory"]);
    const parsed = parseHostsText("hosts:\n  - { name: here, kind: local, workdir: /tmp/a }\n  - { name: mem, kind: memory, slots: 2 }\n", "h.yaml");
    expect(parsed.hosts.map((host) => host.kind)).toEqual(["local", "memory"]);
    const bad = errorOf(() => parseHostsText("hosts:\n  - name: mem\n    kind: memory\n    slots: 0\n", "h.yaml"));
    expect(bad.where).toBe("h.yaml:4");
    expect(bad.message).toContain('hosts.0.slots (host "mem")');
    expect(bad.hint).toBe("slots is how many runs the shelf holds");
    const rule = errorOf(() => parseHostsText("hosts:\n  - name: mem\n    kind: memory\n    slots: 1\n    shelf: forbidden\n", "h.yaml"));
    expect([rule.message, rule.where]).toEqual(['host "mem" names the forbidden shelf', "h.yaml:5"]);
    const unknown = errorOf(() => parseHostsText("hosts:\n  - { name: x, kind: cloud }\n", "h.yaml"));
    expect(unknown.hint).toBe("kind is local, ssh, queue, slurm, ray or memory");
  });

  it("is resolved, opened, given its capacity, dispatched to and checked through the registry", async () => {
    const file = join(folder, "hosts.yaml");
    await writeFile(file, "hosts:\n  - { name: mem, kind: memory, slots: 2, max_runs: 3 }\n");
    const hostsFile = await loadHostsFile(file);
    expect(hostsFile.hosts).toEqual([{ name: "mem", kind: "memory", slots: 2, max_runs: 3, shelf: "default" }]);

    const { hosts, problems } = await openDispatchHosts(hostsFile);
    expect(problems).toEqual([]);
    expect(hosts.map((host) => host.capacity)).toEqual([{ name: "mem", gpuIndices: [0, 1], maxRuns: 3 }]);

    const items = await Promise.all(
      [
        ["two-gpus", 2],
        ["cpu-only", 0],
      ].map(async ([id, gpus]) => {
        const blueprintFile = await writeFixtureBlueprint(folder, { id: String(id), campaign: "c", gpus: Number(gpus) });
        return { blueprint: await readBlueprintFile(blueprintFile), file: blueprintFile, campaign: "c", resultDir: join(folder, "results", String(id)) };
      }),
    );
    const rows = await dispatchBlueprints({ items, hosts, wait: false });
    expect(rows.map((row) => [row.blueprintId, row.host, row.state, row.gpuIndices])).toEqual([
      ["two-gpus", "mem", "launching", [0, 1]],
      ["cpu-only", "mem", "launching", []],
    ]);
    expect(opened[0]!.launches.map((launch) => launch.blueprintId)).toEqual(["two-gpus", "cpu-only"]);

    const check = await checkHost(hostsFile.hosts[0]!);
    expect(check).toMatchObject({ name: "mem", kind: "memory", ok: true, reachable: "yes (shelf default)", gpuCount: 2, problems: [] });
    expect((await openLauncher(hostsFile.hosts[0]!)).kind).toBe("memory");
  });

  it("is gone once unregistered: hosts.yaml may not name it, and a loaded host of it is refused", () => {
    unregister();
    expect(hostKinds().map((kind) => kind.kind)).toEqual(["local", "ssh", "queue", "slurm", "ray"]);
    expect(errorOf(() => parseHostsText("hosts:\n  - { name: mem, kind: memory, slots: 2 }\n", "h.yaml")).hint).toBe("kind is local, ssh, queue, slurm or ray");
    expect(() => hostKindOf({ name: "mem", kind: "memory" })).toThrow(/no host kind/);
    expect(() => registerHostKind(hostKindOf({ name: "x", kind: "local" }))).toThrow(/registered twice/);
  });
});
