import { z } from "zod";

/**
 * The `model:` section of swarm.yaml: the engine configuration without the fields the
 * server fills in itself (`experimentDir` comes from `experiment_dir`, the embedded
 * engine's `optimizer` from the top-level `optimizer`).
 *
 * Written against the documented EngineConfig shape; switch to ENGINES'
 * `engineConfigSchema` (swarm/engines/index.ts) once it lands, keeping strictness.
 */
export const modelConfigSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("embedded"),
    seed: z.number().int().optional(),
    embedded: z.record(z.string(), z.unknown()).optional(),
  }),
  z.strictObject({
    kind: z.literal("openai-compatible"),
    baseUrl: z.url(),
    apiKey: z.string().optional(),
    model: z.string().min(1),
    trainerCommand: z.string().optional(),
    loadAdapterPath: z.string().optional(),
  }),
]);

export type ModelConfig = z.output<typeof modelConfigSchema>;
