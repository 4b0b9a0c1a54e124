import { z } from "zod";
import { defineHostKind, hostNameSchema, slotsOf } from "../port/host-kind.ts";
import type { Launcher } from "../port/launcher.ts";

/**
 * `kind: queue`: BullMQ on Redis, pulled by worker daemons on a cluster. `gpus` is the
 * slots the dispatcher may fill; each daemon enforces its own. Opening one connects to
 * Redis and checks its eviction policy at once, which is also all `a3r hosts check` can
 * learn from here.
 */
const queueHostSchema = z.strictObject({
  name: hostNameSchema,
  kind: z.literal("queue"),
  redis: z.string().regex(/^rediss?:\/\//, "a redis:// or rediss:// URL"),
  queue: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' and '-' (BullMQ forbids ':')")
    .default("a3r"),
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/)
    .default("bull"),
  gpus: z.number().int().min(0).max(100_000),
  max_runs: z.number().int().min(1).max(100_000).optional(),
});

export type QueueHostConfig = z.infer<typeof queueHostSchema>;

// BullMQ loads only when a queue host is opened.
const openQueueLauncher = async (host: QueueHostConfig): Promise<Launcher> =>
  (await import("./queue-launcher.ts")).QueueLauncher.open({ host: host.name, redisUrl: host.redis, queue: host.queue, prefix: host.prefix });

export const queueHostKind = defineHostKind<QueueHostConfig, QueueHostConfig>({
  kind: "queue",
  schema: queueHostSchema,
  resolve: (entry) => entry,
  openLauncher: openQueueLauncher,
  capacity: async (host) => slotsOf(host, host.gpus),
  check: async (host, row) => {
    const launcher = await openQueueLauncher(host);
    await launcher.close();
    row.reachable = "yes";
    row.a3r = "(daemons)";
    row.gpus = String(host.gpus);
    row.gpuCount = host.gpus;
    row.ok = true;
  },
});
