/**
 * The swarm training substrate, usable on its own: a server hosting a trainable policy
 * behind an OpenAI-compatible API with per-episode keys, and a client SDK for agents.
 */
export { minimumAdminTokenLength, startSwarmServer, type SwarmServer, type SwarmServerOptions } from "./server/swarm-server.ts";
export { isLoopbackHost, requireEpisodeKey } from "./server/protocol-routes.ts";
export { TrainingCoordinator } from "./server/training-coordinator.ts";
export { engineStates, legalTransitions, type EngineState } from "./server/engine-state.ts";
export { decideBatch, type StrategyDecision, type PoolProgress } from "./server/batching-strategies.ts";
export type { StepMetrics } from "./server/step-metrics.ts";
export { createSwarmLogger, silentLogger, type SwarmLogger } from "./server/logger.ts";
export { loadSwarmConfig, parseSwarmConfig, swarmConfigSchema, sampleCollectionMethods, SwarmConfigError } from "./config/config.ts";
export type { SwarmConfig, SwarmConfigInput, SampleCollectionMethod } from "./config/config.ts";
export type { AgentJetMapping } from "./config/agentjet.ts";
export * from "./client/index.ts";
