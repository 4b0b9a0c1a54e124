import { addAgentJetRoutes } from "./agentjet-routes.ts";
import { addControlRoutes } from "./control-routes.ts";
import { addEpisodeRoutes } from "./episode-routes.ts";
import type { Gateway } from "./gateway.ts";
import { parseBody, readBody } from "./wire/http-tools.ts";
import type { SwarmLogger } from "./logger.ts";
import type { PathConfinement } from "./path-confinement.ts";
import type { AddRoute, ReadBody, Route, RouteGroupContext } from "./route-types.ts";
import { addStatusRoutes } from "./status-routes.ts";
import type { TrainingCoordinator } from "./training-coordinator.ts";

export type { AddRoute, ReadBody, Route, RouteContext, RouteKind } from "./route-types.ts";
export { isLoopbackHost, requireEpisodeKey } from "./episode-routes.ts";

/**
 * Every endpoint of swarm-protocol.md §2, keyed by "METHOD /path", by group: what anyone
 * may read (status-routes.ts), what changes the run (control-routes.ts), an episode's
 * life (episode-routes.ts), AgentJet's extras (agentjet-routes.ts) and the model APIs
 * (the gateway).
 */
export function protocolRoutes(
  coordinator: TrainingCoordinator,
  gateway: Gateway,
  security: { adminToken: string | undefined },
  setup: { experimentRoot: string; logger: SwarmLogger; confinement: PathConfinement },
): Map<string, Route> {
  const body: ReadBody = async (request, schema, endpoint) =>
    parseBody(await readBody(request, coordinator.config.limits.max_request_body_bytes), schema, endpoint);
  const routes = new Map<string, Route>();
  const add: AddRoute = (key, kind, handle) => {
    routes.set(key, { kind, handle });
  };
  const group: RouteGroupContext = { add, body, coordinator, logger: setup.logger };

  addStatusRoutes(group);
  addControlRoutes(group, setup);
  addEpisodeRoutes(group, security);
  addAgentJetRoutes(group);
  add("POST /v1/chat/completions", "openai", (request, response) => gateway.chatCompletions(request, response));
  add("POST /v1/messages", "openai", (request, response) => gateway.messages(request, response));
  add("POST /v1/messages/count_tokens", "openai", (request, response) => gateway.countTokens(request, response));
  add("POST /v1/responses", "openai", (request, response) => gateway.responses(request, response));
  add("GET /v1/models", "openai", (request, response) => gateway.models(request, response));
  return routes;
}
