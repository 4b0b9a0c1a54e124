import { z } from "zod";
import { absolutePathSchema, hostNameSchema } from "../port/host-kind.ts";

/** A ray entry of hosts.yaml (`ray-kind.ts` reads it), and the config its launcher gets. */
export const rayHostSchema = z.strictObject({
  name: hostNameSchema,
  kind: z.literal("ray"),
  /** The head's GCS address, as `ray start --head --port` opened it: host:port. */
  address: z.string().regex(/^[A-Za-z0-9._-]+:\d{1,5}$/, 'host:port of the Ray head, e.g. "ray-head.cluster.example:6379"'),
  /** The Python (with ray, the cluster's version) that runs a3r's driver on this machine; default python3. */
  python: z.string().min(1).optional(),
  /** Ray namespace of the run actors: two a3r installations sharing a cluster keep theirs apart. */
  namespace: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, '.', '_' and '-'")
    .default("a3r"),
  /** GPUs a run asks Ray for when its blueprint names none (`gpus:` in a blueprint wins). */
  gpus_per_run: z.number().int().min(0).max(64).default(0),
  /** CPUs a run asks Ray for; its actor holds them while the worker lives. */
  cpus_per_run: z.number().min(0).max(4096).default(1),
  /** Environment of every run's worker on the nodes (runtime_env-style `env_vars`). */
  environment: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a variable name: letters, digits and '_'"), z.string()).default({}),
  /** How often Ray may restart a run's actor (its Ray worker process died) before the run is lost. */
  max_restarts: z.number().int().min(0).max(100).default(3),
  max_runs: z.number().int().min(1).max(100_000).optional(),
  /** Run folders: a filesystem the nodes and this machine share (NFS, a Kubernetes volume). */
  workdir: absolutePathSchema,
  /** How to call a3r on the nodes; default: the a3r running here (same path on a shared install). */
  a3r: z.string().min(1).optional(),
});

export type RayHostEntry = z.infer<typeof rayHostSchema>;

/** A ray host after loading: `~` expanded, the python and a3r commands filled. */
export type RayHostConfig = RayHostEntry & { python: string; a3r: string };
