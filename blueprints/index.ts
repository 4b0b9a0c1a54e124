/**
 * The blueprint contract: types, schema, parse (a3r and AgentJet), render, audit and the
 * command policy. Pure except for the file helpers in blueprint-file.ts.
 */
export type { Blueprint, BlueprintFormat, BlueprintMode, Finding, SectionKey, Severity } from "./blueprint.ts";
export { anonymousFile, sectionKeys } from "./blueprint.ts";
export { findingCodes } from "./finding-codes.ts";
export type { FindingCode } from "./finding-codes.ts";
export {
  agentjetFrontMatterSchema,
  blueprintFrontMatterSchema,
  blueprintIdMaxLength,
  blueprintIdPattern,
  blueprintModeSchema,
  blueprintVersion,
  isSafeBlueprintId,
  metricSchema,
} from "./front-matter-schema.ts";
export type { BlueprintFrontMatter } from "./front-matter-schema.ts";
export { analyzeBlueprint, parseBlueprint, toSafeId } from "./parse-blueprint.ts";
export type { BlueprintAnalysis } from "./parse-blueprint.ts";
export { renderBlueprint, renderBlueprint as render } from "./render-blueprint.ts";
export { auditBlueprint, auditBlueprint as audit, auditCampaignBlueprints, findDuplicateIds, isInside } from "./audit-blueprint.ts";
export type { AuditOptions } from "./audit-blueprint.ts";
export { blueprintCommandRules, campaignRuleLimits, checkCommand, commandRuleSchema, defaultCommandRules, mergeCommandPolicy } from "./command-policy.ts";
export { allowPatternLimits, allowPatterns, wholeLinePattern } from "./command-policy/line-pattern.ts";
export type { CommandRule, CommandViolation } from "./command-policy.ts";
export { auditBlueprintFile, auditBlueprintFiles, blueprintTextForCopy, readBlueprintFile } from "./blueprint-file.ts";
export { blueprintTemplate } from "./blueprint-template.ts";
export { besideFile, isFileRelative, isProgramName } from "./file-relative-path.ts";
export type { BlueprintTemplateOptions } from "./blueprint-template.ts";
export { sameBlueprintMeaning, blueprintMeaning } from "./blueprint-meaning.ts";
export { maxBlueprintBytes } from "./text-guards.ts";
export {
  applyOverrides,
  baseValuesOf,
  batchSizeKeys,
  checkOverrides,
  configLeafPaths,
  firstNumericKey,
  flattenConfig,
  gpuMemoryUtilizationLeaves,
  isConfigObject,
  isPortNumber,
  isSafeOverrideKey,
  learningRateKeys,
  maxModelLenLeaves,
  numericKeyByName,
  overridePath,
  overrideValueProblems,
  readConfigFile,
  schemaLeaves,
  unwrapSchema,
} from "./overrides/index.ts";
export type { ConfigObject, EngineConfig, OverrideValue, Overrides, ZodInternals } from "./overrides/index.ts";
export { type ConfigSchemas, overrideFindings } from "./override-findings.ts";
