import { defineEngineKind } from "../port/engine-kind.ts";
import { openAiCompatibleEngineConfigSchema } from "./openai-compatible-config.ts";

/** Inference from an upstream `/v1/chat/completions`, the step from an external trainer command. */
export const openAiCompatibleEngineKind = defineEngineKind({
  kind: "openai-compatible",
  configSchema: openAiCompatibleEngineConfigSchema,
  create: async (config) => new (await import("./openai-compatible-engine.ts")).OpenAiCompatibleEngine(config),
  servedModelName: (config) => config.model,
});
