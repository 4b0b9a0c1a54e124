import { z } from "zod";
import { parseDuration } from "../../core/duration.ts";
import { absolutePathSchema, hostNameSchema } from "../port/host-kind.ts";
import type { SshHostConfig } from "../ssh/ssh-kind.ts";

/** A slurm entry of hosts.yaml (`slurm-kind.ts` reads it), and the config its launcher gets. */
/** Partition, account and QOS names: Slurm's own characters, nothing a shell would read. */
const slurmWord = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "letters, digits, '.', '_' and '-'");
const durationText = z.union([z.string(), z.number()]).refine((value) => (parseDuration(value) ?? 0) > 0, 'a duration such as "90m", "4h" or "1h30m"');

export const slurmHostSchema = z.strictObject({
  name: hostNameSchema,
  kind: z.literal("slurm"),
  /** The ssh entry of the login node; absent = the client commands (sbatch, squeue) run here. */
  login: hostNameSchema.optional(),
  partition: slurmWord.optional(),
  account: slurmWord.optional(),
  qos: slurmWord.optional(),
  /** GPUs asked for a run whose blueprint names none (`gpus:` in a blueprint wins). */
  gpus_per_run: z.number().int().min(0).max(64).optional(),
  /** The Gres a GPU is: `gpu`, or `gpu:a100` for a type. */
  gres: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_-]*(:[A-Za-z0-9_.-]+)?$/, 'a Gres name, optionally with a type: "gpu" or "gpu:a100"')
    .default("gpu"),
  cpus_per_run: z.number().int().min(1).max(4096).optional(),
  memory_per_run: z
    .string()
    .regex(/^\d+[KMGT]?$/, 'as sbatch --mem takes it: "64G", "16000M"')
    .optional(),
  /** Overrides the time limit derived from a blueprint's time budget plus the worker's grace. */
  time_limit: durationText.optional(),
  /** More sbatch options, each one word such as "--constraint=a100" (quoted, never read by a shell). */
  sbatch_options: z.array(z.string().regex(/^--[a-z][a-z0-9-]*(=\S+)?$/, 'one sbatch option per item, "--name" or "--name=value", no spaces')).default([]),
  /** SLURM_CONF for the client commands, where the cluster's config is not the default one. */
  slurm_conf: absolutePathSchema.optional(),
  /** Seconds between scancel --signal=TERM and a plain scancel on cancel. */
  cancel_grace: durationText.optional(),
  max_runs: z.number().int().min(1).max(100_000).optional(),
  workdir: absolutePathSchema,
  a3r: z.string().min(1).optional(),
});

export type SlurmHostEntry = z.infer<typeof slurmHostSchema>;

/** A slurm host after loading: its login node's ssh entry is resolved (absent = local commands). */
export type SlurmHostConfig = Omit<SlurmHostEntry, "login"> & { a3r: string; login?: SshHostConfig };
