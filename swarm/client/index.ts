export { SwarmClient, SwarmRequestError, SwarmFinishedError, SwarmEngineFailedError, SwarmUnreachableError } from "./swarm-client.ts";
export type { SwarmClientOptions, EpisodeHandle, EngineStatus, EndEpisodeOptions } from "./swarm-client.ts";
export { runEpisodes } from "./run-episodes.ts";
export type { EpisodeTask, EpisodeOutcome, RunProgress, RunSummary, RunEpisodesOptions } from "./run-episodes.ts";
export { backoffDelay, isConnectionError } from "./backoff.ts";
export { beginMultiEpisode, runMultiEpisode, MultiEpisodeEndError, MultiEpisodeClaimTimeoutError } from "./multi-model.ts";
export type { RoleClients, MultiEpisode, MultiEpisodeOptions } from "./multi-model.ts";
export { runMultiEpisodes, isMultiRoleTask } from "./run-multi-episodes.ts";
export type { MultiRoleTask, MultiRunOptions, MultiRunSummary, MultiEpisodeRecord } from "./run-multi-episodes.ts";
