export { modelConfigSchema, type ModelConfig } from "../engines/engine-registry.ts";
