/**
 * What a Slurm partition offers, from `sinfo -h -N -o '%N|%P|%c|%G|%t'` (one line per node
 * and partition). Pure. Nodes that are down, drained, failing or in maintenance offer
 * nothing; busy ones still count, since Slurm queues what does not fit.
 */
export interface SlurmCapacity {
  /** The partition counted: the one hosts.yaml names, else the cluster's default (sinfo's '*'). */
  partition: string | undefined;
  nodes: number;
  cpus: number;
  gpus: number;
}

const unusable = /^(down|drain|drng|fail|failg|maint|inval|boot|pow|unk|npc|futr)/;

/** GPUs of `gres` ("gpu" or "gpu:a100") in a node's Gres text, e.g. "gpu:a100:4(S:0-1),gpu:v100:2". */
export function gpusInGres(text: string, gres = "gpu"): number {
  const [wanted, wantedType] = gres.split(":");
  let total = 0;
  for (const item of text.split(",")) {
    const parts = item.replace(/\(.*\)$/, "").split(":");
    if (parts[0] !== wanted) continue;
    const count = Number(parts.at(-1));
    const type = parts.length === 3 ? parts[1] : undefined;
    if (wantedType !== undefined && type !== wantedType) continue;
    if (Number.isInteger(count) && count > 0) total += count;
  }
  return total;
}

export function parseSinfo(text: string, partition: string | undefined, gres = "gpu"): SlurmCapacity {
  const rows = text
    .split("\n")
    .map((line) => line.trim().split("|"))
    .filter((fields) => fields.length >= 5 && fields[0] !== "");
  const chosen = partition ?? rows.find((fields) => fields[1]!.endsWith("*"))?.[1]?.slice(0, -1);
  const seen = new Set<string>();
  const capacity: SlurmCapacity = { partition: chosen, nodes: 0, cpus: 0, gpus: 0 };
  for (const [node, nodePartition, cpus, nodeGres, state] of rows) {
    if (nodePartition!.replace(/\*$/, "") !== chosen || seen.has(node!)) continue;
    seen.add(node!);
    if (unusable.test(state!.replace(/[*~#!%$@^-]+$/, ""))) continue;
    capacity.nodes += 1;
    capacity.cpus += Number(cpus) || 0;
    capacity.gpus += gpusInGres(nodeGres!, gres);
  }
  return capacity;
}
