import { defineEngineKind } from "../port/engine-kind.ts";
import { vllmEngineConfigSchema } from "./vllm-config.ts";

/** A managed inference server (vLLM or a3r's reference server) and one persistent Python trainer. */
export const vllmEngineKind = defineEngineKind({
  kind: "vllm",
  configSchema: vllmEngineConfigSchema,
  create: async (config) => new (await import("./vllm-engine.ts")).VllmEngine(config),
  languageModel: true,
});
