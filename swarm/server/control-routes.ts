import { parse as parseYaml } from "yaml";
import { parseSwarmConfig, SwarmConfigError } from "../config/config.ts";
import { AgentJetConfigError, applyAgentJetConfig, isAgentJetConfig } from "./agentjet-config.ts";
import { HttpError, sendJson } from "./wire/http-tools.ts";
import { resumeSchema, syncTrainConfigSchema } from "./protocol-schemas.ts";
import type { PathConfinement } from "./path-confinement.ts";
import type { RouteGroupContext } from "./route-types.ts";
import { RequestRefused } from "./training-coordinator.ts";

/**
 * What changes the run (PROTOCOL.md §4): its configuration, starting and stopping the
 * engine, checkpoints. All are `control` routes (the admin token, when one is set).
 */
export function addControlRoutes(group: RouteGroupContext, setup: { experimentRoot: string; confinement: PathConfinement }): void {
  const { add, body, coordinator, logger } = group;
  add("POST /sync_train_config", "control", async (request, response) => {
    const { yaml_as_string } = await body(request, syncTrainConfigSchema, "sync_train_config");
    coordinator.checkReconfigurable();
    let lenient: unknown;
    try {
      lenient = parseYaml(yaml_as_string, { maxAliasCount: 100 });
    } catch {
      lenient = undefined; // the strict parser below reports the syntax error with its line
    }
    if (isAgentJetConfig(lenient)) {
      // AgentJet's own YAML: map what a3r understands, say what it ignored (answer and log).
      let mapping: ReturnType<typeof applyAgentJetConfig>;
      try {
        mapping = applyAgentJetConfig(lenient, coordinator.config, setup.experimentRoot);
      } catch (error) {
        if (error instanceof AgentJetConfigError) throw new HttpError(400, `yaml_as_string (AgentJet form): ${error.message}`);
        throw error;
      }
      setup.confinement.check("yaml_as_string: ajet.experiment_dir", mapping.config.experiment_dir);
      coordinator.replaceConfig(mapping.config);
      logger.info(
        { mapped: mapping.mapped, ignored: mapping.ignored, ignoredNotListed: mapping.ignoredNotListed, experimentDir: mapping.config.experiment_dir },
        "sync_train_config: AgentJet configuration applied; the ignored keys take no effect here",
      );
      sendJson(response, 200, {
        success: true,
        config_form: "agentjet",
        mapped_keys: mapping.mapped,
        ignored_keys: mapping.ignored,
        ignored_keys_not_listed: mapping.ignoredNotListed,
        experiment_dir: mapping.config.experiment_dir,
      });
      return;
    }
    // Keys in their old camelCase spelling work; the answer and the log say what to write.
    const deprecated: string[] = [];
    try {
      const next = parseSwarmConfig(yaml_as_string, { file: "yaml_as_string", onDeprecation: (line) => deprecated.push(line) });
      const current = coordinator.config;
      // Where the server writes checkpoints and metrics: never outside its allowed roots.
      setup.confinement.check("yaml_as_string: experiment_dir", next.experiment_dir);
      coordinator.replaceConfig({ ...next, port: current.port, host: current.host, admin_token: current.admin_token });
    } catch (error) {
      if (error instanceof SwarmConfigError) throw new HttpError(400, `${error.where}: ${error.message}${error.hint ? ` (${error.hint})` : ""}`);
      throw error;
    }
    if (deprecated.length > 0) logger.warn({ deprecated }, "sync_train_config: keys in their old spelling (they still work)");
    sendJson(response, 200, {
      success: true,
      config_form: "a3r",
      experiment_dir: coordinator.config.experiment_dir,
      ...(deprecated.length > 0 ? { deprecated_keys: deprecated } : {}),
    });
  });
  add("POST /start_engine", "control", (_request, response) => {
    coordinator.start();
    sendJson(response, 200, { success: true, pid: process.pid });
  });
  add("POST /stop_engine", "control", async (_request, response) => {
    await coordinator.stop("stop_engine called");
    sendJson(response, 200, { success: true });
  });
  add("POST /save_checkpoint", "control", async (_request, response) => {
    if (coordinator.state.state === "ENGINE.WEIGHT_SYNCING")
      throw new RequestRefused(409, "the weights are changing (ENGINE.WEIGHT_SYNCING); retry when the step is done");
    const path = await coordinator.saveCheckpoint();
    sendJson(response, 200, { success: true, path, global_step: coordinator.globalStep });
  });
  add("POST /resume_from_checkpoint", "control", async (request, response) => {
    const { path } = await body(request, resumeSchema, "resume_from_checkpoint");
    // A checkpoint is loaded as weights: only from under the allowed roots.
    await coordinator.resume(path ? setup.confinement.check("resume_from_checkpoint: path", path) : undefined);
    sendJson(response, 200, { success: true, global_step: coordinator.globalStep });
  });
}
