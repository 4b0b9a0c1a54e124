import { z } from "zod";
import { embeddedEngineConfigSchema, openAiCompatibleEngineConfigSchema, vllmEngineConfigSchema } from "./engines/engine-config.ts";

/**
 * The `model:` section of swarm.yaml: ENGINES' engine configuration without the fields the
 * server fills in itself (`experimentDir` comes from `experiment_dir`, the embedded
 * engine's `optimizer` from the top-level `optimizer`). Still strict: unknown keys fail.
 */
export const modelConfigSchema = z.discriminatedUnion("kind", [
  embeddedEngineConfigSchema.omit({ experimentDir: true, optimizer: true }),
  openAiCompatibleEngineConfigSchema.omit({ experimentDir: true }),
  vllmEngineConfigSchema.omit({ experimentDir: true, optimizer: true }),
]);

export type ModelConfig = z.output<typeof modelConfigSchema>;
