import { z } from "zod";

/**
 * Engine configuration as nested into the swarm server's YAML. Unknown keys are errors.
 * Sampling defaults (temperature, top_p, max_tokens) are not here: the server passes them
 * per request.
 */
export const optimizerConfigSchema = z.strictObject({
  lr: z.number().positive(),
  klCoef: z.number().min(0),
  /** PPO clip epsilon. */
  clip: z.number().positive().max(1),
});

export const embeddedModelOptionsSchema = z.strictObject({
  /** Words the policy can say (lower-case, one word each); defaults to the example tasks' words. */
  vocabulary: z.array(z.string().min(1)).min(1).optional(),
  /** log2 of the number of hashed feature rows (default 15; each array is 2^bits x (words + 1) floats). */
  featureBits: z.number().int().min(8).max(20).optional(),
  /** Run the optimizer step in a worker thread (default true; false is for tight in-process loops). */
  trainOffThread: z.boolean().optional(),
});

export const embeddedEngineConfigSchema = z.strictObject({
  kind: z.literal("embedded"),
  seed: z.number().int().optional(),
  optimizer: optimizerConfigSchema,
  experimentDir: z.string().min(1),
  embedded: embeddedModelOptionsSchema.optional(),
});

export const openAiCompatibleEngineConfigSchema = z.strictObject({
  kind: z.literal("openai-compatible"),
  /** Base URL of the upstream including /v1, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: z.string().url(),
  apiKey: z.string().optional(),
  model: z.string().min(1),
  /** Shell command run once per optimizer step; see openai-compatible/README.md. */
  trainerCommand: z.string().min(1).optional(),
  /** Path on the upstream's origin that loads a LoRA adapter (default /v1/load_lora_adapter). */
  loadAdapterPath: z.string().startsWith("/").optional(),
  experimentDir: z.string().min(1),
});

export const engineConfigSchema = z.discriminatedUnion("kind", [embeddedEngineConfigSchema, openAiCompatibleEngineConfigSchema]);

export type OptimizerConfig = z.infer<typeof optimizerConfigSchema>;
export type EmbeddedModelOptions = z.infer<typeof embeddedModelOptionsSchema>;
export type EmbeddedEngineConfig = z.infer<typeof embeddedEngineConfigSchema>;
export type OpenAiCompatibleEngineConfig = z.infer<typeof openAiCompatibleEngineConfigSchema>;
export type EngineConfig = z.infer<typeof engineConfigSchema>;
