import { existsSync } from "node:fs";
import { posix } from "node:path";
import { A3rError } from "../core/errors.ts";
import { liftCommandSecrets } from "../core/redact.ts";
import { anonymousFile } from "./blueprint.ts";
import type { Blueprint, Finding, SectionKey } from "./blueprint.ts";
import { z } from "zod";
import { blueprintCommandRules, checkCommand, commandRuleSchema, defaultCommandRules } from "./command-policy.ts";
import type { CommandRule } from "./command-policy.ts";
import { problem, toFinding } from "./finding.ts";
import type { Problem } from "./finding.ts";
import { isFileRelative, isProgramName } from "./file-relative-path.ts";
import { checkFrontMatter } from "./front-matter-check.ts";
import { isSafeBlueprintId } from "./front-matter-schema.ts";
import { a3rSectionTitles } from "./markdown-sections.ts";
import { analyzeBlueprint } from "./parse-blueprint.ts";

export interface AuditOptions {
  /** The file name findings carry when text is given (a Blueprint's own `file` wins). */
  file?: string;
  /** Also report paths that do not exist on this machine (codebase, venv, config). */
  checkPaths?: boolean;
  /** How existence is checked when `checkPaths` is on; defaults to the local file system. */
  pathExists?: (path: string) => boolean;
  /** Absolute folders the result directory must lie in, after resolving `..`. */
  allowedRoots?: readonly string[];
  /** The command policy; defaults to `defaultCommandRules`. */
  commandRules?: readonly CommandRule[];
}

/**
 * Audits one blueprint, given as text (every structural problem is reported with its line,
 * and nothing throws) or as a parsed Blueprint (its values are checked). Findings come
 * sorted by line. The result directory is not checked for existence: it is made by the run.
 */
export function auditBlueprint(input: Blueprint | string, options: AuditOptions = {}): Finding[] {
  const problems: Problem[] = [];
  let blueprint: Blueprint | undefined;
  if (typeof input === "string") {
    const analysis = analyzeBlueprint(input, options.file);
    problems.push(...analysis.problems);
    blueprint = analysis.blueprint;
  } else {
    blueprint = input;
    problems.push(...checkStructure(input));
  }
  if (blueprint) problems.push(...checkValues(blueprint, options));
  const file = (typeof input === "string" ? options.file : (input.file ?? options.file)) ?? anonymousFile;
  return problems.sort((a, b) => a.line - b.line).map((item) => toFinding(file, item));
}

/**
 * Audits the blueprints of one campaign (or one stage) together: each one on its own, plus
 * ids used twice. The duplicate is reported on every blueprint after the first.
 */
export function auditCampaignBlueprints(blueprints: readonly Blueprint[], options: Omit<AuditOptions, "file"> = {}): Finding[] {
  const findings = blueprints.flatMap((blueprint) => auditBlueprint(blueprint, options));
  return [...findings, ...findDuplicateIds(blueprints)];
}

/**
 * ID_DUPLICATE findings for every blueprint whose id an earlier one of the same campaign
 * already uses (ids are the idempotency key of runs within a campaign). Blueprints without
 * a campaign field form one group of their own, so two copies of one experiment written
 * for different campaigns, or in a3r and AgentJet form, can be checked together.
 */
export function findDuplicateIds(blueprints: readonly Blueprint[]): Finding[] {
  const first = new Map<string, Blueprint>();
  const findings: Finding[] = [];
  for (const blueprint of blueprints) {
    const campaign = typeof blueprint.frontMatter.campaign === "string" ? blueprint.frontMatter.campaign : "";
    const key = `${campaign}\u0000${blueprint.id}`;
    const earlier = first.get(key);
    if (!earlier) {
      first.set(key, blueprint);
      continue;
    }
    const where = earlier.file ? `${earlier.file}${earlier.lines.id ? `:${earlier.lines.id}` : ""}` : "an earlier blueprint";
    findings.push(
      toFinding(
        blueprint.file ?? anonymousFile,
        problem(
          "ID_DUPLICATE",
          blueprint.lines.id ?? blueprint.lines.resultDir ?? 0,
          `blueprint id "${blueprint.id}" is already used by ${where}`,
          "give each blueprint of a campaign its own id: the id is the idempotency key of its run",
        ),
      ),
    );
  }
  return findings;
}

const requiredFields: SectionKey[] = ["purpose", "codebase", "venv", "command", "resultDir", "timeBudget"];

/** What the parser would have reported, for a Blueprint built or edited in code. */
function checkStructure(blueprint: Blueprint): Problem[] {
  const problems: Problem[] = [];
  for (const key of requiredFields) {
    if (String(blueprint[key]).trim() === "") {
      problems.push(problem("SECTION_EMPTY", blueprint.lines[key] ?? 0, `"${a3rSectionTitles[key]}" is empty`, `fill in the ${a3rSectionTitles[key]} section`));
    }
  }
  if (blueprint.config === "")
    problems.push(problem("SECTION_EMPTY", blueprint.lines.config ?? 0, `"Configuration" is empty`, "give the configuration file's absolute path, or none"));
  if (!(blueprint.timeBudgetMs > 0) && blueprint.timeBudget.trim() !== "") {
    problems.push(
      problem(
        "TIME_BUDGET_INVALID",
        blueprint.lines["timeBudget.value"] ?? 0,
        `time budget "${blueprint.timeBudget}" is not a duration`,
        "write a duration with a unit, such as 4h, 90m or 1h30m",
      ),
    );
  }
  if (blueprint.format === "a3r") {
    // The front matter as render would write it: the object's id and mode are the truth.
    problems.push(...checkFrontMatter({ ...blueprint.frontMatter, id: blueprint.id, mode: blueprint.mode }, "a3r", blueprint.lines));
  } else {
    if (!isSafeBlueprintId(blueprint.id)) {
      problems.push(
        problem(
          "ID_INVALID",
          blueprint.lines.id ?? 0,
          `blueprint id "${blueprint.id}" is not a safe name`,
          "use lower-case letters, digits, '.', '_' and '-' (at most 80 characters)",
        ),
      );
    }
    if (Object.keys(blueprint.frontMatter).length > 0) problems.push(...checkFrontMatter(blueprint.frontMatter, "agentjet", blueprint.lines));
  }
  return problems;
}

const pathFields = [
  ["codebase", "Codebase"],
  ["venv", "Virtual Environment"],
  ["config", "Configuration"],
  ["resultDir", "Result Directory"],
] as const;

/** Checks that hold for any well-formed blueprint: paths, confinement, command policy. */
function checkValues(blueprint: Blueprint, options: AuditOptions): Problem[] {
  const problems: Problem[] = [];
  const pathExists = options.pathExists ?? existsSync;
  for (const [key, title] of pathFields) {
    const value = blueprint[key];
    if (value === null || value === "") continue;
    const line = blueprint.lines[`${key}.value`] ?? blueprint.lines[key] ?? 0;
    if (key === "venv" && isProgramName(value)) continue;
    if (!value.startsWith("/")) {
      const tilde = value.startsWith("~") ? " (~ is not expanded)" : "";
      const hint = isFileRelative(value)
        ? "a path starting with ./ or ../ is relative to the blueprint's own file: validate the file itself, not standard input"
        : "write the full path from /, or start it with ./ to mean the blueprint's own folder: a worker runs in its own folder, so other relative paths point elsewhere";
      problems.push(problem("PATH_RELATIVE", line, `${title} path "${value}" is not absolute${tilde}`, hint));
      continue;
    }
    if (options.checkPaths && key !== "resultDir" && !pathExists(value)) {
      problems.push(
        problem(
          "PATH_NOT_FOUND",
          line,
          `${title} path "${value}" does not exist on this machine`,
          "fix the path, or audit on the host the blueprint will run on",
        ),
      );
    }
  }
  if (options.allowedRoots && options.allowedRoots.length > 0 && blueprint.resultDir.startsWith("/")) {
    const resolved = posix.resolve(blueprint.resultDir);
    // Strictly below a root: a run writing into the root itself would mix with every other run.
    if (!options.allowedRoots.some((root) => isInside(resolved, root) && resolved !== posix.resolve(root))) {
      problems.push(
        problem(
          "RESULT_DIR_OUTSIDE_ROOTS",
          blueprint.lines["resultDir.value"] ?? blueprint.lines.resultDir ?? 0,
          `result directory "${blueprint.resultDir}" resolves to ${resolved}, outside the allowed roots (${options.allowedRoots.join(", ")})`,
          `put the result directory under ${options.allowedRoots[0]}`,
        ),
      );
    }
  }
  const commandLine = blueprint.lines["command.value"] ?? blueprint.lines.command ?? 0;
  let rules = options.commandRules ?? defaultCommandRules;
  try {
    rules = blueprintCommandRules(blueprint.frontMatter, rules);
  } catch (error) {
    // A malformed `command_rules` is reported by the front-matter check; one that redefines a
    // default rule is reported here. Either way the command is still held to the defaults.
    if (error instanceof A3rError && z.array(commandRuleSchema).safeParse(blueprint.frontMatter.command_rules).success) {
      problems.push(
        problem(
          "FRONT_MATTER_INVALID",
          blueprint.lines.command_rules ?? 1,
          `front matter field "command_rules": ${error.message}`,
          error.hint ?? "a campaign may only add command rules",
        ),
      );
    }
  }
  for (const violation of checkCommand(blueprint.command, rules)) {
    const forbidden = violation.severity === "error";
    problems.push(
      problem(
        forbidden ? "COMMAND_FORBIDDEN" : "COMMAND_DISCOURAGED",
        commandLine === 0 ? 0 : commandLine + violation.line,
        `command ${forbidden ? "breaks" : "trips"} rule ${violation.ruleId} (${violation.reason}): ${violation.match}`,
        forbidden ? "remove it from the command; if a run truly needs it, a person does it by hand outside a3r" : "change the command so it runs unattended",
        violation.severity,
      ),
    );
  }
  problems.push(...checkCommandSecrets(blueprint.command, commandLine));
  return problems;
}

/**
 * A literal secret in the command is copied wherever the blueprint is (stage folders,
 * launchers' run folders, result directories, the leader's checkpoint): a warning, with
 * the reference to use instead, which the worker's shell expands from its environment.
 */
function checkCommandSecrets(command: string, commandLine: number): Problem[] {
  const lifted = liftCommandSecrets(command);
  const lines = command.split("\n");
  return Object.entries(lifted.secrets).map(([name, value]) =>
    problem(
      "COMMAND_LITERAL_SECRET",
      commandLine === 0
        ? 0
        : commandLine +
            Math.max(
              0,
              lines.findIndex((line) => line.includes(value)),
            ),
      `the command holds a secret's value literally; it would be written into every copy of the blueprint and its records`,
      `put the value in an environment variable where the worker runs (export ${name}=...) and write "\${${name}}" in the command instead`,
      "warning",
    ),
  );
}

/**
 * Lexical confinement: both paths are normalized (`..` and `.` resolved, no symlinks
 * followed, because the folder may not exist yet), then compared folder by folder so
 * `/runs-other` is not inside `/runs`.
 */
export function isInside(path: string, root: string): boolean {
  const resolvedPath = posix.resolve(path);
  const resolvedRoot = posix.resolve(root);
  if (resolvedRoot === "/") return true;
  return resolvedPath === resolvedRoot || resolvedPath.startsWith(`${resolvedRoot}/`);
}
