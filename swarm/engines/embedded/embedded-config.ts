import { z } from "zod";
import { optimizerConfigSchema } from "../port/engine-config.ts";

export const embeddedModelOptionsSchema = z.strictObject({
  /** Words the policy can say (lower-case, one word each); defaults to the example tasks' words. */
  vocabulary: z.array(z.string().min(1)).min(1).optional(),
  /** log2 of the number of hashed feature rows (default 15; each array is 2^bits x (words + 1) floats). */
  feature_bits: z.number().int().min(8).max(20).optional(),
  /** Run the optimizer step in a worker thread (default true; false is for tight in-process loops). */
  train_off_thread: z.boolean().optional(),
});

export const embeddedEngineConfigSchema = z.strictObject({
  kind: z.literal("embedded"),
  seed: z.number().int().optional(),
  optimizer: optimizerConfigSchema,
  experiment_dir: z.string().min(1),
  embedded: embeddedModelOptionsSchema.optional(),
});

export type EmbeddedModelOptions = z.infer<typeof embeddedModelOptionsSchema>;
export type EmbeddedEngineConfig = z.infer<typeof embeddedEngineConfigSchema>;
