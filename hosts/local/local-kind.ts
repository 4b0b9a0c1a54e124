import { z } from "zod";
import { probeLocally } from "../port/host-probe.ts";
import { absolutePathSchema, applyProbe, defineHostKind, expandHome, gpusSchema, hostNameSchema, runningA3rCommand, slotsOf } from "../port/host-kind.ts";
import { LocalLauncher } from "./local-launcher.ts";

/**
 * `kind: local`: this machine. Its GPUs are what hosts.yaml says, or what nvidia-smi lists
 * (`detect`, none found = CPU-only); `a3r` defaults to the a3r running now.
 */
const localHostSchema = z.strictObject({
  name: hostNameSchema,
  kind: z.literal("local"),
  gpus: gpusSchema.default("detect"),
  max_runs: z.number().int().min(1).max(10_000).optional(),
  workdir: absolutePathSchema,
  a3r: z.string().min(1).optional(),
});

export type LocalHostConfig = z.infer<typeof localHostSchema> & { a3r: string };

export const localHostKind = defineHostKind<z.infer<typeof localHostSchema>, LocalHostConfig>({
  kind: "local",
  schema: localHostSchema,
  resolve: (entry, { home }) => ({ ...entry, workdir: expandHome(entry.workdir, home), a3r: entry.a3r ?? runningA3rCommand() }),
  openLauncher: async (host) => new LocalLauncher({ host: host.name, workdir: host.workdir, a3r: host.a3r }),
  capacity: async (host) => slotsOf(host, host.gpus === "detect" ? (await probeLocally(host.a3r, host.workdir)).gpus.length : host.gpus),
  check: async (host, row) => {
    const probe = await probeLocally(host.a3r, host.workdir);
    row.reachable = "yes (local)";
    applyProbe(row, host, probe);
  },
});
