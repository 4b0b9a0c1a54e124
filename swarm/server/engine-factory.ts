import type { SwarmConfig } from "../config/config-schema.ts";
import type { EngineConfig } from "../engines/port/engine-config.ts";
import type { Engine } from "../engines/port/engine.ts";
import { takesOptimizer } from "../engines/engine-registry.ts";

/** Makes the engine a configuration asks for; the server calls it on every boot. */
export type EngineFactory = (config: SwarmConfig) => Engine | Promise<Engine>;

/**
 * swarm.yaml's `model` section plus the fields the server owns: `experiment_dir`, and
 * `optimizer` (the top-level section) for a kind whose schema takes it.
 */
export function engineConfigOf(config: SwarmConfig): EngineConfig {
  return {
    ...config.model,
    experiment_dir: config.experiment_dir,
    ...(takesOptimizer(config.model.kind) ? { optimizer: config.optimizer } : {}),
  };
}

/** Loaded on first boot so that config parsing and the client never pull in engine code. */
export const defaultEngineFactory: EngineFactory = async (config) => {
  const { createEngine } = await import("../engines/index.ts");
  return createEngine(engineConfigOf(config));
};
