/**
 * The swarm.yaml contract alone, for callers that check or merge a config without running
 * a server: `a3r blueprint validate` and the worker's config copy (where an override key
 * lands, blueprints/overrides/). A light entry: it must not load the server or an engine.
 */
export { swarmConfigSchema } from "./config/config-schema.ts";
