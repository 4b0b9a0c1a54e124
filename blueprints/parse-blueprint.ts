import { basename } from "node:path";
import { A3rError } from "../core/errors.ts";
import type { ErrorCode } from "../core/errors.ts";
import { anonymousFile, sectionKeys } from "./blueprint.ts";
import type { Blueprint, BlueprintFormat, BlueprintMode, SectionKey } from "./blueprint.ts";
import { hasErrors, problem } from "./finding.ts";
import type { Problem } from "./finding.ts";
import { besideFile } from "./file-relative-path.ts";
import { readFrontMatter } from "./front-matter.ts";
import { checkFrontMatter } from "./front-matter-check.ts";
import { blueprintIdMaxLength, isSafeBlueprintId } from "./front-matter-schema.ts";
import { a3rSectionTitles, splitSections } from "./markdown-sections.ts";
import type { RawSection } from "./markdown-sections.ts";
import { extractCommand, extractPath, stripTrailing, extractTimeBudgetText, fencedBlockOffset, parseTimeBudget, saysNone } from "./section-values.ts";
import { guardText, normalizeNewlines } from "./text-guards.ts";

export interface BlueprintAnalysis {
  /** The best reading of the text; undefined only when it could not be read at all. */
  blueprint: Blueprint | undefined;
  /** What is wrong with the text's structure (policy checks are the audit's job). */
  problems: Problem[];
}

const optionalSections = new Set<SectionKey>(["notes"]);

/**
 * Reads a blueprint leniently: every structural problem becomes a Problem with a line, and
 * a best-effort Blueprint is built anyway so an audit can go on to check its values. A
 * missing section is reported on the line where it belongs: the heading of the next
 * section present, or the end of the file. Notes are optional (a warning when missing).
 */
export function analyzeBlueprint(input: string, file?: string): BlueprintAnalysis {
  const refused = guardText(input);
  if (refused) return { blueprint: undefined, problems: [refused] };
  const text = normalizeNewlines(input);
  const frontMatter = readFrontMatter(text);
  const problems: Problem[] = [...frontMatter.problems];
  const split = splitSections(frontMatter.body, frontMatter.bodyStartLine);
  const format: BlueprintFormat = split.sections.some((section) => section.agentjet) ? "agentjet" : "a3r";

  const found = new Map<SectionKey, RawSection>();
  const unknown: RawSection[] = [];
  for (const section of split.sections) {
    if (section.key === undefined) {
      unknown.push(section);
      problems.push(
        problem(
          "SECTION_UNKNOWN",
          section.line,
          `"## ${section.heading}" is not a blueprint section; its text is kept with the notes`,
          `use one of: ${Object.values(a3rSectionTitles).join(", ")}`,
          "warning",
        ),
      );
    } else if (found.has(section.key)) {
      problems.push(
        problem(
          "SECTION_DUPLICATE",
          section.line,
          `section "${section.heading}" appears again (first on line ${found.get(section.key)!.line})`,
          "merge the two sections into one",
        ),
      );
    } else {
      found.set(section.key, section);
    }
  }

  sectionKeys.forEach((key, index) => {
    const section = found.get(key);
    const title = a3rSectionTitles[key];
    const severity = optionalSections.has(key) ? "warning" : "error";
    if (!section) {
      const next = sectionKeys
        .slice(index + 1)
        .map((later) => found.get(later))
        .find((later) => later !== undefined);
      problems.push(
        problem(
          "SECTION_MISSING",
          next?.line ?? split.endLine,
          `section "## ${title}" is missing`,
          `add a "## ${title}" section${hintForSection(key)}`,
          severity,
        ),
      );
    } else if (section.content === "") {
      problems.push(
        problem("SECTION_EMPTY", section.line, `section "## ${section.heading}" is empty`, `write the ${describeSection(key)} under the heading`, severity),
      );
    }
  });

  const content = (key: SectionKey): string => found.get(key)?.content ?? "";
  const timeBudget = content("timeBudget") === "" ? "" : extractTimeBudgetText(content("timeBudget"));
  const timeBudgetMs = parseTimeBudget(timeBudget) ?? Number.NaN;
  const timeSection = found.get("timeBudget");
  if (timeSection && timeSection.content !== "" && Number.isNaN(timeBudgetMs)) {
    problems.push(
      problem(
        "TIME_BUDGET_INVALID",
        timeSection.contentLine,
        `time budget "${timeBudget}" is not a duration`,
        "write a duration with a unit, such as 4h, 90m or 1h30m",
      ),
    );
  }

  if (!frontMatter.present && format === "a3r") {
    problems.push(
      problem(
        "FRONT_MATTER_MISSING",
        1,
        "an a3r blueprint needs YAML front matter (a3r, id, mode ...)",
        "start the file with --- , a3r: blueprint/v1, id: ..., mode: ..., then ---",
      ),
    );
  } else if (!hasErrors(frontMatter.problems)) {
    problems.push(...checkFrontMatter(frontMatter.data, format, frontMatter.fieldLines));
  }

  const command = content("command") === "" ? "" : extractCommand(content("command"));
  const resultDir = content("resultDir") === "" ? "" : extractPath(content("resultDir"));
  const notes = [content("notes"), ...unknown.map((section) => `## ${section.heading}\n\n${section.content}`.trim())]
    .filter((part) => part !== "")
    .join("\n\n");
  const data = frontMatter.data;
  const blueprint: Blueprint = {
    id: chooseId(data.id, resultDir, file),
    mode: chooseMode(data.mode, command),
    purpose: content("purpose"),
    codebase: content("codebase") === "" ? "" : besideFile(extractPath(content("codebase")), file),
    venv: content("venv") === "" ? "" : besideFile(extractPath(content("venv")), file),
    config: content("config") === "" ? "" : saysNone(content("config")) ? null : besideFile(extractPath(content("config")), file),
    command,
    resultDir: besideFile(resultDir, file),
    timeBudgetMs,
    timeBudget,
    notes,
    frontMatter: data,
    format,
    ...(file === undefined ? {} : { file }),
    lines: collectLines(frontMatter.present, frontMatter.fieldLines, split.title?.line, found),
  };
  return { blueprint, problems: problems.sort((a, b) => a.line - b.line) };
}

/**
 * Parses a blueprint, a3r or AgentJet. Throws an A3rError naming the file and line of the
 * first structural error (the rest are in `details.findings`); warnings do not throw.
 */
export function parseBlueprint(text: string, file?: string): Blueprint {
  const { blueprint, problems } = analyzeBlueprint(text, file);
  const errors = problems.filter((item) => item.severity === "error");
  if (blueprint && !hasErrors(errors)) return blueprint;
  const first = errors[0]!;
  const name = file ?? anonymousFile;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  throw new A3rError(errorCodeOf(first.code), `${first.message}${more}`, {
    where: first.line > 0 ? `${name}:${first.line}` : name,
    hint: first.hint,
    details: { findings: errors.map((item) => ({ file: name, ...item })) },
  });
}

function errorCodeOf(code: Problem["code"]): ErrorCode {
  switch (code) {
    case "FILE_TOO_LARGE":
    case "FILE_BINARY":
    case "YAML_INVALID":
      return code;
    case "FRONT_MATTER_INVALID":
      return "SCHEMA_INVALID";
    default:
      return "BLUEPRINT_INVALID";
  }
}

function chooseId(declared: unknown, resultDir: string, file: string | undefined): string {
  if (typeof declared === "string" && declared !== "") return declared;
  const fromResult = toSafeId(basename(stripTrailing(resultDir, "/")));
  if (fromResult !== "") return fromResult;
  const fromFile = toSafeId(
    basename(file ?? "")
      .replace(/\.md$/i, "")
      .replace(/\.agentjet$/i, "")
      .replace(/^blueprint$/i, ""),
  );
  return fromFile !== "" ? fromFile : "blueprint";
}

/** Turns a folder or file name into a safe id ("Exp LR 3e-6" -> "exp-lr-3e-6"). */
export function toSafeId(name: string): string {
  const id = name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, blueprintIdMaxLength)
    .replace(/[-.]+$/, "");
  return isSafeBlueprintId(id) ? id : "";
}

function chooseMode(declared: unknown, command: string): BlueprintMode {
  if (declared === "swarm" || declared === "classic") return declared;
  return /\bswarm\b/i.test(command) ? "swarm" : "classic";
}

function collectLines(
  hasFrontMatter: boolean,
  fieldLines: Record<string, number>,
  titleLine: number | undefined,
  found: Map<SectionKey, RawSection>,
): Record<string, number> {
  const lines: Record<string, number> = { ...fieldLines };
  if (hasFrontMatter) lines.frontMatter = 1;
  if (titleLine !== undefined) lines.title = titleLine;
  for (const [key, section] of found) {
    lines[key] = section.line;
    lines[`${key}.value`] = key === "command" ? section.contentLine + fencedBlockOffset(section.content) : section.contentLine;
  }
  return lines;
}

function describeSection(key: SectionKey): string {
  switch (key) {
    case "purpose":
      return "hypothesis, the controlled variables and how this run differs from its siblings";
    case "codebase":
      return "absolute path of the code, in backticks";
    case "venv":
      return "absolute path of the interpreter or environment, in backticks";
    case "config":
      return "absolute path of the configuration file in backticks, or none";
    case "command":
      return "command in a fenced code block";
    case "resultDir":
      return "absolute path of the result directory, in backticks";
    case "timeBudget":
      return "time budget as a duration, such as 4h";
    case "notes":
      return "preparation, cleanup and expectations";
  }
}

function hintForSection(key: SectionKey): string {
  return ` holding the ${describeSection(key)}`;
}
