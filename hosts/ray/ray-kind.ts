import { defineHostKind, expandHome, runningA3rCommand, slotsOf } from "../port/host-kind.ts";
import type { Launcher } from "../port/launcher.ts";
import { rayHostSchema, type RayHostConfig, type RayHostEntry } from "./ray-config.ts";
import type { RayNodeView } from "./ray-driver.ts";

/**
 * `kind: ray`: runs placed on a Ray cluster as detached actors (ray-launcher.ts), through
 * a Python driver of this machine that connects to the head with Ray core (no dashboard,
 * no Jobs API). The workdir is a filesystem this machine and the nodes share.
 */

async function openRayLauncher(host: RayHostConfig) {
  const { RayLauncher } = await import("./ray-launcher.ts");
  return new RayLauncher({ host });
}

async function rayLauncherOf(host: RayHostConfig, launcher: Launcher) {
  const { RayLauncher } = await import("./ray-launcher.ts");
  if (!(launcher instanceof RayLauncher)) throw new Error(`host ${host.name} is a ray host but its launcher is ${launcher.kind}`);
  return launcher;
}

/** "2 GPUs (1 free), 4 CPUs (3 free) on 1 node: 127.0.0.1 1/2 GPU 3/4 CPU" */
export function describeNodes(nodes: readonly RayNodeView[]): { gpus: number; text: string } {
  const alive = nodes.filter((node) => node.alive);
  const sum = (pick: (node: RayNodeView) => number) => alive.reduce((total, node) => total + pick(node), 0);
  const each = alive.map((node) => `${node.address} ${node.free_gpus}/${node.gpus} GPU ${node.free_cpus}/${node.cpus} CPU`).join(", ");
  const down = nodes.length - alive.length;
  return {
    gpus: sum((node) => node.gpus),
    text: `${sum((node) => node.gpus)} GPUs (${sum((node) => node.free_gpus)} free), ${sum((node) => node.cpus)} CPUs (${sum((node) => node.free_cpus)} free) on ${alive.length} node${alive.length === 1 ? "" : "s"}${down ? ` (+${down} down)` : ""}: ${each}`,
  };
}

export const rayHostKind = defineHostKind<RayHostEntry, RayHostConfig>({
  kind: "ray",
  schema: rayHostSchema,
  hint: (field, path) => {
    if (path.includes("environment")) return "write a map of variable names (letters, digits and '_') to strings, e.g. environment: { HF_HOME: /data/hf }";
    if (field === "address") return 'write the head\'s GCS address as host:port, the --port of "ray start --head"';
    return undefined;
  },
  resolve: (entry, context) => ({
    ...entry,
    workdir: expandHome(entry.workdir, context.home),
    python: entry.python === undefined ? "python3" : expandHome(entry.python, context.home),
    // A shared install is the common case: the a3r running here is the one the nodes see.
    a3r: entry.a3r ?? runningA3rCommand(),
  }),
  openLauncher: openRayLauncher,
  /**
   * The cluster's GPUs as the scheduler's slots (Ray enforces them and queues what does not
   * fit); a CPU-only cluster gets one slot per `cpus_per_run` CPUs.
   */
  capacity: async (host, launcher) => {
    const nodes = (await (await rayLauncherOf(host, launcher)).nodes()).filter((node) => node.alive);
    const gpus = Math.floor(nodes.reduce((total, node) => total + node.gpus, 0));
    const cpus = nodes.reduce((total, node) => total + node.cpus, 0);
    const byCpu = host.cpus_per_run > 0 ? Math.floor(cpus / host.cpus_per_run) : cpus;
    return slotsOf(host, gpus, Math.max(host.gpus_per_run > 0 ? Math.floor(gpus / host.gpus_per_run) : Math.max(gpus, byCpu), 1));
  },
  check: async (host, row) => {
    const launcher = await openRayLauncher(host);
    try {
      const nodes = await launcher.nodes();
      row.reachable = `yes (Ray head ${host.address})`;
      row.hostKey = "-";
      const described = describeNodes(nodes);
      row.gpus = described.text;
      row.gpuCount = described.gpus;
      if (nodes.every((node) => !node.alive)) row.problems.push(`the Ray cluster at ${host.address} has no live node`);
      const version = await launcher.a3rVersion();
      row.a3r = version.code === 0 ? `yes (${version.output.slice(0, 30)}, node ${version.node})` : "no";
      if (version.code !== 0) row.problems.push(`"${host.a3r} --version" failed on Ray node ${version.node}: ${version.output || `exit ${version.code}`}`);
      row.freeDisk = "-";
      row.ok = row.problems.length === 0;
    } finally {
      await launcher.close();
    }
  },
});
