export type * from "./engine.ts";
export { optimizerConfigSchema, type EngineConfig, type OptimizerConfig } from "./engine-config.ts";
export { defineEngineKind, type EngineKind } from "./engine-kind.ts";
export {
  createEngine,
  engineConfigSchema,
  engineKind,
  engineKindNames,
  modelConfigSchema,
  registerEngineKind,
  type ModelConfig,
} from "./engine-registry.ts";
export { embeddedEngineConfigSchema, embeddedModelOptionsSchema, type EmbeddedEngineConfig } from "./embedded/embedded-kind.ts";
export { openAiCompatibleEngineConfigSchema, type OpenAiCompatibleEngineConfig } from "./openai-compatible/openai-compatible-kind.ts";
export { vllmEngineConfigSchema, type VllmEngineConfig, type VllmEngineConfigInput } from "./vllm/vllm-kind.ts";
export { EngineError, type EngineErrorCode } from "./engine-error.ts";
export { EmbeddedEngine } from "./embedded/embedded-engine.ts";
export { OpenAiCompatibleEngine } from "./openai-compatible/openai-compatible-engine.ts";
export { VllmEngine } from "./vllm/vllm-engine.ts";
