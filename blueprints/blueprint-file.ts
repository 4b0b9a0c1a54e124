import { open, stat } from "node:fs/promises";
import { A3rError } from "../core/errors.ts";
import type { Blueprint, Finding } from "./blueprint.ts";
import { auditBlueprint, findDuplicateIds } from "./audit-blueprint.ts";
import type { AuditOptions } from "./audit-blueprint.ts";
import { problem, toFinding } from "./finding.ts";
import type { Problem } from "./finding.ts";
import { isFileRelative } from "./file-relative-path.ts";
import { analyzeBlueprint, parseBlueprint } from "./parse-blueprint.ts";
import { type ConfigSchemas, overrideFindings } from "./override-findings.ts";
import { renderBlueprint } from "./render-blueprint.ts";
import { decodeBlueprintBytes, maxBlueprintBytes } from "./text-guards.ts";

/**
 * Reads a blueprint file's text, refusing what is not a blueprint before parsing: missing
 * or unreadable files, folders, files over 1 MiB (checked by size first, and again on the
 * bytes read, in case the file grows in between) and binary files.
 */
async function readBlueprintText(path: string): Promise<{ text: string } | { problem: Problem }> {
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) return { problem: problem("FILE_UNREADABLE", 0, "is not a regular file", "give the path of a markdown blueprint file") };
    size = info.size;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { problem: problem("FILE_NOT_FOUND", 0, "no such file", "check the path and the current folder") };
    return { problem: problem("FILE_UNREADABLE", 0, `cannot read the file (${code ?? String(error)})`, "check the file's permissions") };
  }
  if (size > maxBlueprintBytes) {
    return {
      problem: problem(
        "FILE_TOO_LARGE",
        0,
        `the file is ${size} bytes, over the 1 MiB limit`,
        "a blueprint is a page of markdown: move data and logs out of it (at most 1 MiB)",
      ),
    };
  }
  let handle;
  try {
    handle = await open(path, "r");
    // Read one byte past the limit so a file that grew since stat is still refused.
    const buffer = Buffer.alloc(maxBlueprintBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return decodeBlueprintBytes(buffer.subarray(0, bytesRead));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { problem: problem("FILE_UNREADABLE", 0, `cannot read the file (${code ?? String(error)})`, "check the file's permissions") };
  } finally {
    await handle?.close();
  }
}

const errorCodeOfFileProblem = {
  FILE_NOT_FOUND: "FILE_NOT_FOUND",
  FILE_TOO_LARGE: "FILE_TOO_LARGE",
  FILE_BINARY: "FILE_BINARY",
} as const;

/** Reads and parses a blueprint file; throws an A3rError naming the file and line. */
export async function readBlueprintFile(path: string): Promise<Blueprint> {
  const read = await readBlueprintText(path);
  if ("problem" in read) {
    const { code, line, message, hint } = read.problem;
    const errorCode = code in errorCodeOfFileProblem ? errorCodeOfFileProblem[code as keyof typeof errorCodeOfFileProblem] : "FILE_UNREADABLE";
    throw new A3rError(errorCode, message, { where: line > 0 ? `${path}:${line}` : path, hint });
  }
  return parseBlueprint(read.text, path);
}

/**
 * Audits a blueprint file. Never throws for anything about the file or its content: an
 * unreadable, binary or huge file is one finding, and parse problems are findings too.
 */
export async function auditBlueprintFile(path: string, options: Omit<AuditOptions, "file"> = {}): Promise<Finding[]> {
  const read = await readBlueprintText(path);
  if ("problem" in read) return [toFinding(path, read.problem)];
  return auditBlueprint(read.text, { ...options, file: path });
}

/**
 * Audits several files as one set: each file on its own, plus ids used twice across the
 * set (the way `a3r blueprint validate a.md b.md` and a campaign stage need it).
 */
export async function auditBlueprintFiles(
  paths: readonly string[],
  options: Omit<AuditOptions, "file"> & {
    /** The engines' config schemas: each blueprint's overrides are checked merged into its config (OVERRIDE_INVALID). */
    configSchemas?: ConfigSchemas;
  } = {},
): Promise<Finding[]> {
  const findings: Finding[] = [];
  const blueprints: Blueprint[] = [];
  for (const path of paths) {
    const read = await readBlueprintText(path);
    if ("problem" in read) {
      findings.push(toFinding(path, read.problem));
      continue;
    }
    findings.push(...auditBlueprint(read.text, { ...options, file: path }));
    const { blueprint } = analyzeBlueprint(read.text, path);
    if (blueprint) blueprints.push(blueprint);
    if (blueprint && options.configSchemas) findings.push(...(await overrideFindings(blueprint, options.configSchemas)));
  }
  return [...findings, ...findDuplicateIds(blueprints)];
}

/**
 * The text to copy when a blueprint travels to another folder or host (a launcher's run
 * folder, the result directory): the file's own text, unless it names paths relative to
 * itself, which would point elsewhere from the copy; then the blueprint rendered with those
 * paths made absolute (same meaning, see `renderBlueprint`).
 */
export async function blueprintTextForCopy(path: string): Promise<string> {
  const read = await readBlueprintText(path);
  if ("problem" in read) return readBlueprintFile(path).then(renderBlueprint);
  const asWritten = analyzeBlueprint(read.text).blueprint;
  const relative = asWritten !== undefined && [asWritten.codebase, asWritten.venv, asWritten.config ?? "", asWritten.resultDir].some(isFileRelative);
  if (!relative) return read.text;
  const { blueprint } = analyzeBlueprint(read.text, path);
  // A blueprint too broken to render travels as written: the worker reports what is wrong.
  return blueprint === undefined ? read.text : renderBlueprint(blueprint);
}
