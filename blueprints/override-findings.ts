import type { z } from "zod";
import type { Blueprint, BlueprintMode, Finding } from "./blueprint.ts";
import { checkOverrides, isConfigObject, readConfigFile } from "./overrides/index.ts";

/** The engines' config schemas by blueprint mode, given by the caller (leader, worker and validate may not import swarm/). */
export type ConfigSchemas = Partial<Record<BlueprintMode, z.ZodType>>;

/**
 * `a3r blueprint validate`'s check of a blueprint's overrides against its engine's config
 * schema, the same check the leader's audit makes: one OVERRIDE_INVALID finding per
 * problem, on the `overrides` line. Nothing to say when the mode has no schema here, the
 * blueprint has no config, or the config cannot be read on this machine (it may live on
 * the run's host; `--check-paths` reports a missing file).
 */
export async function overrideFindings(blueprint: Blueprint, schemas: ConfigSchemas): Promise<Finding[]> {
  const schema = schemas[blueprint.mode];
  const overrides = blueprint.frontMatter.overrides;
  if (!schema || blueprint.config === null || !isConfigObject(overrides) || Object.keys(overrides).length === 0) return [];
  const config = await readConfigFile(blueprint.config).catch(() => undefined);
  if (!config) return [];
  return checkOverrides({ schema, config }, overrides).map((message) => ({
    file: blueprint.file ?? "<text>",
    line: blueprint.lines.overrides ?? 1,
    severity: "error" as const,
    code: "OVERRIDE_INVALID" as const,
    message,
    hint: `fix the override, or the config ${blueprint.config}, so that the engine accepts the merged config`,
  }));
}
