import type { Engine } from "./engine.ts";
import { engineConfigSchema, type EngineConfig } from "./engine-config.ts";
import { EmbeddedEngine } from "./embedded/embedded-engine.ts";
import { OpenAiCompatibleEngine } from "./openai-compatible/openai-compatible-engine.ts";

export type * from "./engine.ts";
export {
  engineConfigSchema,
  optimizerConfigSchema,
  embeddedModelOptionsSchema,
  type EngineConfig,
  type EmbeddedEngineConfig,
  type OpenAiCompatibleEngineConfig,
  type OptimizerConfig,
} from "./engine-config.ts";
export { EngineError, type EngineErrorCode } from "./engine-error.ts";
export { EmbeddedEngine } from "./embedded/embedded-engine.ts";
export { OpenAiCompatibleEngine } from "./openai-compatible/openai-compatible-engine.ts";

/** The only place that picks an engine implementation from configuration. */
export function createEngine(config: EngineConfig): Engine {
  const parsed = engineConfigSchema.parse(config);
  return parsed.kind === "embedded" ? new EmbeddedEngine(parsed) : new OpenAiCompatibleEngine(parsed);
}
