import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { SwarmConfig } from "../config/config-schema.ts";
import type { EngineFactory } from "./engine-factory.ts";
import { Gateway } from "./gateway.ts";
import { HttpError, bearerToken, sendJson } from "./wire/http-tools.ts";
import { createSwarmLogger, type SwarmLogger } from "./logger.ts";
import { PathConfinement } from "./path-confinement.ts";
import { loopbackPeerUid, ownUid, peerUsersKnowable } from "./peer-user.ts";
import { isLoopbackHost, protocolRoutes, type Route } from "./protocol-routes.ts";
import { RequestRefused, TrainingCoordinator } from "./training-coordinator.ts";

export interface SwarmServerOptions {
  config: SwarmConfig;
  /** Overrides config.admin_token. */
  adminToken?: string;
  /** Start the engine right away (default true); false waits for start_engine. */
  autoStart?: boolean;
  /** Resume from the latest checkpoint when there is one. */
  resume?: boolean;
  logger?: SwarmLogger;
  engineFactory?: EngineFactory;
  /** How often idle episodes are reclaimed (ms). */
  tickMs?: number;
  /**
   * Directories a client may name over HTTP (sync_train_config's experiment_dir, a
   * checkpoint to resume from), besides the server's start directory, its configured
   * experiment_dir and swarm.yaml's allowed_roots (PROTOCOL.md §6).
   */
  allowedRoots?: string[];
  /** C4/C5: the least time a step stays observable to polling clients (ms; over swarm.yaml's sync_observable_seconds). */
  syncObservableMs?: number;
  /** Distinct client_uuids that may hold episodes claimed without a credential (over swarm.yaml's max_unkeyed_claimers; default 32). */
  maxUnkeyedClaimers?: number;
}

/** A server listening beyond loopback needs an admin token at least this long (guessing it must not pay). */
export const minimumAdminTokenLength = 24;

export interface SwarmServer {
  url: string;
  port: number;
  coordinator: TrainingCoordinator;
  /** Stops the engine (checkpoint when training advanced), then the HTTP server. */
  close(): Promise<void>;
}

/**
 * The swarm server: node:http with a route table, no framework (the gateway adds at most
 * a few milliseconds to each completion). Any error in a handler becomes a JSON answer;
 * nothing a client sends can crash the process or leave training state half-changed
 * (the coordinator validates before it mutates).
 */
export async function startSwarmServer(options: SwarmServerOptions): Promise<SwarmServer> {
  const logger = options.logger ?? createSwarmLogger();
  // The options win over swarm.yaml's keys (tests pass them); both fall back to the defaults.
  const syncObservableMs = options.syncObservableMs ?? secondsToMs(options.config.sync_observable_seconds);
  const maxUnkeyedClaimers = options.maxUnkeyedClaimers ?? options.config.max_unkeyed_claimers;
  const coordinator = new TrainingCoordinator(options.config, logger, options.engineFactory, {
    ...(syncObservableMs === undefined ? {} : { syncObservableMs }),
    ...(maxUnkeyedClaimers === undefined ? {} : { maxUnkeyedClaimers }),
  });
  const gateway = new Gateway(coordinator, logger);
  const adminToken = options.adminToken ?? options.config.admin_token;
  // The CLI says this with the flag to fix; the library refuses too, so no caller can open
  // sync_train_config and save_checkpoint to the network by forgetting a token.
  if (!isLoopbackHost(options.config.host) && (adminToken === undefined || adminToken.length < minimumAdminTokenLength))
    throw new Error(`listening on ${options.config.host} (beyond this machine) needs an admin token of at least ${minimumAdminTokenLength} characters`);
  const confinement = new PathConfinement([
    process.cwd(),
    options.config.experiment_dir,
    ...(options.config.allowed_roots ?? []),
    ...(options.allowedRoots ?? []),
  ]);
  const routes = protocolRoutes(coordinator, gateway, { adminToken }, { experimentRoot: options.config.experiment_dir, logger, confinement });

  // Without a token, control calls are told apart by the caller's OS user where the kernel says it.
  const access: Access = { adminToken, sameUserOnly: adminToken === undefined && peerUsersKnowable() };
  const server = createServer((request, response) => {
    void handle(request, response, routes, access, logger);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on("clientError", (_error, socket) => {
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.config.port, options.config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  coordinator.config = { ...coordinator.config, port };
  const tick = setInterval(() => {
    try {
      coordinator.tick();
    } catch (error) {
      // Housekeeping must never take the server down; the next tick tries again.
      logger.error({ error: error instanceof Error ? error.stack : String(error) }, "housekeeping tick failed");
    }
  }, options.tickMs ?? 250);
  tick.unref();
  if (options.autoStart ?? true) coordinator.start(options.resume ? "latest-if-any" : undefined);

  let closing: Promise<void> | undefined;
  return {
    url: `http://${options.config.host}:${port}`,
    port,
    coordinator,
    close: () =>
      (closing ??= (async () => {
        clearInterval(tick);
        await coordinator.stop("server shutting down");
        await closeServer(server);
      })()),
  };
}

/** Who may call what: the admin token when there is one, else (control routes) the server's own OS user. */
interface Access {
  adminToken: string | undefined;
  sameUserOnly: boolean;
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  routes: Map<string, Route>,
  { adminToken, sameUserOnly }: Access,
  logger: SwarmLogger,
): Promise<void> {
  const path = (request.url ?? "/").split("?")[0]!.replace(/\/+$/, "") || "/";
  const route = routes.get(`${request.method} ${path}`);
  const openai = path.startsWith("/v1/");
  try {
    if (!route) {
      const known = [...routes.keys()].filter((key) => key.endsWith(` ${path}`));
      throw known.length > 0
        ? new HttpError(405, `${request.method} is not allowed on ${path}; use ${known.map((key) => key.split(" ")[0]).join(" or ")}`)
        : new HttpError(404, `no endpoint ${request.method} ${path}`);
    }
    if (route.kind === "control") {
      if (adminToken !== undefined) checkAdmin(request, adminToken);
      else if (sameUserOnly && loopbackPeerUid(request.socket) !== ownUid()) throw otherUserRefusal(path);
    }
    await route.handle(request, response, { privileged: adminToken !== undefined && presentsAdmin(request, adminToken) });
  } catch (error) {
    const status = error instanceof HttpError || error instanceof RequestRefused ? error.status : 500;
    const message = error instanceof Error ? error.message : String(error);
    if (status >= 500) logger.error({ path, error: error instanceof Error ? error.stack : message }, "request failed");
    if (response.headersSent) {
      response.destroy();
      return;
    }
    if (openai) {
      const type = error instanceof HttpError ? error.type : status >= 500 ? "server_error" : "invalid_request_error";
      sendJson(response, status, { error: { message, type, param: null, code: null } });
    } else {
      // `detail` is where AgentJet's client reads the reason (FastAPI's error shape).
      sendJson(response, status, { success: false, error: message, failure_reason: message, detail: message });
    }
  }
}

/**
 * On a token-less server the control endpoints answer only the OS user running it: they
 * choose what the server executes and loads (swarm.yaml's model commands, python,
 * checkpoints), so another local user reaching them could run code as this one.
 */
function otherUserRefusal(path: string): HttpError {
  return new HttpError(
    401,
    `${path} on a server without an admin token answers only the OS user running the server; call it as that user, or give the server a token (A3R_SWARM_ADMIN_TOKEN) and send it`,
  );
}

function presentsAdmin(request: IncomingMessage, adminToken: string): boolean {
  const header = request.headers["x-admin-token"];
  const given = (typeof header === "string" ? header : undefined) ?? bearerToken(request);
  const expected = Buffer.from(adminToken);
  const actual = Buffer.from(given ?? "");
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

function checkAdmin(request: IncomingMessage, adminToken: string): void {
  if (!presentsAdmin(request, adminToken)) {
    throw new HttpError(401, "this control endpoint requires the server's admin token (send it as `Authorization: Bearer <token>` or `x-admin-token`)");
  }
}

function secondsToMs(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : seconds * 1000;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
