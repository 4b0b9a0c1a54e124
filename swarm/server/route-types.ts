import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import type { SwarmLogger } from "./logger.ts";
import type { TrainingCoordinator } from "./training-coordinator.ts";

/** The shapes of the server's route table (protocol-routes.ts builds it, swarm-server.ts serves it). */

/** `control` routes need the admin token when one is configured; `openai` ones an episode key. */
export type RouteKind = "open" | "control" | "openai";

/** What the server knows about the caller: whether it presented the admin token. */
export interface RouteContext {
  privileged: boolean;
}

/** Registers one route (the table protocolRoutes builds). */
export type AddRoute = (key: string, kind: RouteKind, handle: Route["handle"]) => void;
/** Reads and validates a request body against a schema (400 naming the field). */
export type ReadBody = <T extends z.ZodType>(request: IncomingMessage, schema: T, endpoint: string) => Promise<z.output<T>>;

export interface Route {
  kind: RouteKind;
  handle(request: IncomingMessage, response: ServerResponse, context: RouteContext): Promise<void> | void;
}

/** What each group of routes (status, control, episode, AgentJet's) is added with. */
export interface RouteGroupContext {
  add: AddRoute;
  body: ReadBody;
  coordinator: TrainingCoordinator;
  logger: SwarmLogger;
}
