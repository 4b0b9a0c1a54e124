import { defineEngineKind } from "../port/engine-kind.ts";
import { embeddedEngineConfigSchema } from "./embedded-config.ts";

/** The small CPU policy in TypeScript (README.md beside engines/). */
export const embeddedEngineKind = defineEngineKind({
  kind: "embedded",
  configSchema: embeddedEngineConfigSchema,
  create: async (config) => new (await import("./embedded-engine.ts")).EmbeddedEngine(config),
});
