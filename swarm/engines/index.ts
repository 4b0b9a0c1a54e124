import type { Engine } from "./engine.ts";
import { engineConfigSchema, type EngineConfig } from "./engine-config.ts";
import { EmbeddedEngine } from "./embedded/embedded-engine.ts";
import { OpenAiCompatibleEngine } from "./openai-compatible/openai-compatible-engine.ts";
import { VllmEngine } from "./vllm/vllm-engine.ts";

export type * from "./engine.ts";
export {
  engineConfigSchema,
  optimizerConfigSchema,
  embeddedModelOptionsSchema,
  type EngineConfig,
  type EmbeddedEngineConfig,
  type OpenAiCompatibleEngineConfig,
  type OptimizerConfig,
  type VllmEngineConfig,
  type VllmEngineConfigInput,
  vllmEngineConfigSchema,
} from "./engine-config.ts";
export { EngineError, type EngineErrorCode } from "./engine-error.ts";
export { EmbeddedEngine } from "./embedded/embedded-engine.ts";
export { OpenAiCompatibleEngine } from "./openai-compatible/openai-compatible-engine.ts";
export { VllmEngine } from "./vllm/vllm-engine.ts";

/** The only place that picks an engine implementation from configuration. */
export function createEngine(config: EngineConfig): Engine {
  const parsed = engineConfigSchema.parse(config);
  switch (parsed.kind) {
    case "embedded":
      return new EmbeddedEngine(parsed);
    case "openai-compatible":
      return new OpenAiCompatibleEngine(parsed);
    case "vllm":
      return new VllmEngine(parsed);
  }
}
