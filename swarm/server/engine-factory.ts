import { createEngine, type EngineConfig } from "../engines/index.ts";
import type { Engine } from "../engines/engine.ts";
import type { SwarmConfig } from "../config-schema.ts";

/** Makes the engine a configuration asks for; the server calls it on every boot. */
export type EngineFactory = (config: SwarmConfig) => Engine;

/**
 * swarm.yaml's `model` section plus the fields the server owns: `experimentDir` (from
 * `experiment_dir`) and, for the embedded engine, `optimizer` (from the top-level section).
 */
export function engineConfigOf(config: SwarmConfig): EngineConfig {
  const model = config.model;
  const experimentDir = config.experiment_dir;
  if (model.kind === "embedded") {
    return {
      ...model,
      experimentDir,
      optimizer: { lr: config.optimizer.lr, klCoef: config.optimizer.kl_coef, clip: config.optimizer.clip },
    };
  }
  return { ...model, experimentDir };
}

export const defaultEngineFactory: EngineFactory = (config) => createEngine(engineConfigOf(config));
