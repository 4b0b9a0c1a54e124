/**
 * The one owner of overrides: their type, where a key lands in a config (with the engine's
 * schema where known), the names a concept goes by, application to a config, and the check
 * of overrides against the engine's schema (a blueprint's findings from that check are
 * blueprints/override-findings.ts). The leader's audit, `a3r blueprint validate`, the
 * worker and its playbook all call this folder.
 */
export { applyOverrides, baseValuesOf, flattenConfig, type OverrideValue, type Overrides } from "./apply-overrides.ts";
export { readConfigFile } from "./config-file.ts";
export { isPortKey, isPortNumber, overrideValueProblems } from "./override-values.ts";
export { checkOverrides, type EngineConfig } from "./check-overrides.ts";
export { type ConfigObject, configLeafPaths, isConfigObject, isSafeOverrideKey, overridePath } from "./override-keys.ts";
export {
  batchSizeKeys,
  firstNumericKey,
  gpuMemoryUtilizationLeaves,
  learningRateKeys,
  maxModelLenLeaves,
  numericKeyByName,
} from "./override-synonyms.ts";
export { schemaLeaves, unwrapSchema, type ZodInternals } from "./schema-leaves.ts";
