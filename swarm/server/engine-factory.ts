import type { EngineConfig } from "../engines/engine-config.ts";
import type { Engine } from "../engines/engine.ts";
import type { SwarmConfig } from "../config-schema.ts";

/** Makes the engine a configuration asks for; the server calls it on every boot. */
export type EngineFactory = (config: SwarmConfig) => Engine | Promise<Engine>;

/**
 * swarm.yaml's `model` section plus the fields the server owns: `experimentDir` (from
 * `experiment_dir`) and, for the embedded engine, `optimizer` (from the top-level section).
 */
export function engineConfigOf(config: SwarmConfig): EngineConfig {
  const model = config.model;
  const experimentDir = config.experiment_dir;
  if (model.kind === "embedded" || model.kind === "vllm") {
    return {
      ...model,
      experimentDir,
      optimizer: { lr: config.optimizer.lr, klCoef: config.optimizer.kl_coef, clip: config.optimizer.clip },
    };
  }
  return { ...model, experimentDir };
}

/** Loaded on first boot so that config parsing and the client never pull in engine code. */
export const defaultEngineFactory: EngineFactory = async (config) => {
  const { createEngine } = await import("../engines/index.ts");
  return createEngine(engineConfigOf(config));
};
