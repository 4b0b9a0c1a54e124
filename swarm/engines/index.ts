export type * from "./port/engine.ts";
export { optimizerConfigSchema, type EngineConfig, type OptimizerConfig } from "./port/engine-config.ts";
export { defineEngineKind, type EngineKind } from "./port/engine-kind.ts";
export {
  createEngine,
  engineConfigSchema,
  engineKind,
  engineKindNames,
  modelConfigSchema,
  registerEngineKind,
  type ModelConfig,
} from "./engine-registry.ts";
export { embeddedEngineConfigSchema, embeddedModelOptionsSchema, type EmbeddedEngineConfig } from "./embedded/embedded-config.ts";
export { openAiCompatibleEngineConfigSchema, type OpenAiCompatibleEngineConfig } from "./openai-compatible/openai-compatible-config.ts";
export { vllmEngineConfigSchema, type VllmEngineConfig, type VllmEngineConfigInput } from "./vllm/vllm-config.ts";
export { EngineError, type EngineErrorCode } from "./port/engine-error.ts";
export { EmbeddedEngine } from "./embedded/embedded-engine.ts";
export { OpenAiCompatibleEngine } from "./openai-compatible/openai-compatible-engine.ts";
export { VllmEngine } from "./vllm/vllm-engine.ts";
