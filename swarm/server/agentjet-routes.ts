import { HttpError, bearerToken, sendJson } from "./wire/http-tools.ts";
import type { RouteGroupContext } from "./route-types.ts";
import { pushVerboseLogSchema } from "./protocol-schemas.ts";

/** Verbose log lines kept in memory (the oldest go first). */
const maxVerboseLogEntries = 200;

/**
 * Endpoints AgentJet's client and trainer call that are not part of a3r's own protocol
 * (PROTOCOL.md §2). The experiment folder reveals what others run and the verbose log
 * changes what operators read: `control` routes (the admin token, when one is set). The
 * last prompt is shown to its owner (by episode key) or the admin.
 */
export function addAgentJetRoutes(context: RouteGroupContext): void {
  const { add, body, coordinator, logger } = context;
  add("GET /get_server_experiment_dir", "control", (_request, response) =>
    sendJson(response, 200, { server_experiment_dir: coordinator.config.experiment_dir }),
  );
  const verboseLog: Array<{ timestamp: number; tag: string; message: string }> = [];
  add("POST /push_verbose_log", "control", async (request, response) => {
    const entry = await body(request, pushVerboseLogSchema, "push_verbose_log");
    // Shown in terminals later: control characters become spaces.
    const clean = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ");
    verboseLog.push({ timestamp: Date.now() / 1000, tag: clean(entry.tag), message: clean(entry.message) });
    if (verboseLog.length > maxVerboseLogEntries) verboseLog.splice(0, verboseLog.length - maxVerboseLogEntries);
    logger.info({ tag: clean(entry.tag) }, `verbose log: ${clean(entry.message).slice(0, 500)}`);
    sendJson(response, 200, { success: true });
  });
  add("GET /get_verbose_logs", "control", (_request, response) => sendJson(response, 200, { entries: verboseLog }));
  // The last prompt reveals what a client runs: the admin gets the server's last call, a
  // caller presenting one of its episode keys its own client's last call, anyone else a 401.
  add("POST /replay_latest_llm_call", "open", (request, response, routeContext) => {
    let call = coordinator.latestCall;
    if (!routeContext.privileged) {
      const key = bearerToken(request);
      const owner = key === undefined ? undefined : coordinator.registry.ownerOfKey(key);
      if (owner === undefined)
        throw new HttpError(
          401,
          "replay_latest_llm_call answers only its owner or the admin: send Authorization: Bearer <openai_api_key of one of your episodes> (or the admin token)",
        );
      call = coordinator.latestCallByClient.get(owner);
    }
    if (!call) throw new HttpError(404, "No LLM call has been made yet");
    sendJson(response, 200, call);
  });
}
