import { Option } from "commander";
import type { Command } from "commander";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { writeFileAtomic } from "../core/atomic-file.ts";
import { A3rError } from "../core/errors.ts";
import { auditBlueprintFiles, blueprintTemplate, isSafeBlueprintId, readBlueprintFile } from "../blueprints/index.ts";
import type { Blueprint, BlueprintMode, Finding } from "../blueprints/index.ts";
import { swarmConfigSchema } from "../swarm/schema.ts";
import { exitCode } from "./exit-codes.ts";

export function registerBlueprintCommands(program: Command): void {
  const blueprint = program.command("blueprint").description("create, validate and show experiment blueprints");

  blueprint
    .command("new")
    .description("write a filled-in blueprint template that validates clean")
    .option("--id <id>", "blueprint id (lower-case letters, digits, . _ -)", "new-experiment")
    .addOption(new Option("--mode <mode>", "swarm or classic").choices(["swarm", "classic"]).default("swarm"))
    .option("--campaign <id>", "campaign id written into the front matter")
    .option("--out <file>", "write to this file instead of standard output")
    .option("--force", "overwrite --out when it exists")
    .action(async (options: { id: string; mode: BlueprintMode; campaign?: string; out?: string; force?: boolean }) => {
      if (!isSafeBlueprintId(options.id)) {
        throw new A3rError("USAGE", `--id "${options.id}" is not a safe blueprint id`, {
          hint: "use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit (at most 80 characters)",
        });
      }
      if (options.campaign !== undefined && !isSafeBlueprintId(options.campaign)) {
        throw new A3rError("USAGE", `--campaign "${options.campaign}" is not a safe id`, { hint: "use lower-case letters, digits, '.', '_' and '-'" });
      }
      const text = blueprintTemplate({ id: options.id, mode: options.mode, ...(options.campaign ? { campaign: options.campaign } : {}) });
      if (options.out === undefined) {
        process.stdout.write(text);
        return;
      }
      if (existsSync(options.out) && !options.force) {
        throw new A3rError("USAGE", `${options.out} already exists`, { hint: "choose another --out file, or add --force to overwrite it" });
      }
      await writeFileAtomic(options.out, text);
      process.stdout.write(`wrote ${options.out}\n`);
    });

  blueprint
    .command("validate")
    .description("audit blueprints: sections, paths, time budget, front matter, command policy, duplicate ids")
    .argument("<files...>", "blueprint files")
    .option("--json", "print the findings as a JSON array")
    .option("--check-paths", "also report codebase, interpreter and config paths that do not exist here")
    .option("--allowed-root <dir>", "a folder the result directory must lie in (repeat for several)", collect, [] as string[])
    .action(async (files: string[], options: { json?: boolean; checkPaths?: boolean; allowedRoot: string[] }) => {
      const findings = await auditBlueprintFiles(files, {
        checkPaths: options.checkPaths === true,
        configSchemas: { swarm: swarmConfigSchema },
        ...(options.allowedRoot.length > 0 ? { allowedRoots: options.allowedRoot.map((root) => resolve(root)) } : {}),
      });
      if (options.json) process.stdout.write(`${JSON.stringify(findings, null, 2)}\n`);
      else printFindings(findings, files.length);
      process.exitCode = findings.some((finding) => finding.severity === "error") ? exitCode.failure : exitCode.ok;
    });

  blueprint
    .command("show")
    .description("print a blueprint as the normalized object (a3r and AgentJet alike)")
    .argument("<file>", "blueprint file")
    .option("--json", "print the object as JSON")
    .action(async (file: string, options: { json?: boolean }) => {
      const parsed = await readBlueprintFile(file);
      process.stdout.write(options.json ? `${JSON.stringify(parsed, null, 2)}\n` : describeBlueprint(parsed));
    });
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function printFindings(findings: readonly Finding[], fileCount: number): void {
  for (const finding of findings) {
    const where = finding.line > 0 ? `${finding.file}:${finding.line}` : finding.file;
    process.stdout.write(`${where}: ${finding.severity} ${finding.code} ${finding.message}\n`);
    if (finding.hint) process.stdout.write(`  hint: ${finding.hint}\n`);
  }
  const errors = findings.filter((finding) => finding.severity === "error").length;
  const warnings = findings.length - errors;
  const files = `${fileCount} file${fileCount === 1 ? "" : "s"}`;
  process.stdout.write(findings.length === 0 ? `${files} checked: no findings\n` : `${files} checked: ${errors} error(s), ${warnings} warning(s)\n`);
}

/** A readable key: value listing; multi-line values are indented under their key. */
function describeBlueprint(blueprint: Blueprint): string {
  const rows: [string, string][] = [
    ["id", blueprint.id],
    ["mode", blueprint.mode],
    ["format", blueprint.format],
    ["file", blueprint.file ?? ""],
    ["purpose", blueprint.purpose],
    ["codebase", blueprint.codebase],
    ["venv", blueprint.venv],
    ["config", blueprint.config ?? "none"],
    ["command", blueprint.command],
    ["resultDir", blueprint.resultDir],
    ["timeBudget", `${blueprint.timeBudget} (${blueprint.timeBudgetMs} ms)`],
    ["notes", blueprint.notes],
  ];
  for (const [key, value] of Object.entries(blueprint.frontMatter)) {
    rows.push([`frontMatter.${key}`, typeof value === "string" ? value : JSON.stringify(value)]);
  }
  const width = Math.max(...rows.map(([key]) => key.length)) + 1;
  return rows
    .map(([key, value]) =>
      value.includes("\n")
        ? `${key}:\n${value
            .split("\n")
            .map((line) => `  ${line}`)
            .join("\n")}\n`
        : `${`${key}:`.padEnd(width)} ${value}\n`,
    )
    .join("");
}
