import { stringify } from "yaml";
import { formatDuration } from "../core/duration.ts";
import type { Blueprint } from "./blueprint.ts";
import { blueprintVersion } from "./front-matter-schema.ts";
import { a3rSectionTitles } from "./markdown-sections.ts";

/**
 * Writes a blueprint in the a3r form. Whatever format it was read from, `parse(render(b))`
 * has the same meaning as `b`: the same values, and every front-matter field (unknown ones
 * too) with a3r, id and mode first. Comments in the original front matter are not kept.
 */
export function renderBlueprint(blueprint: Blueprint): string {
  const sections: [keyof typeof a3rSectionTitles, string][] = [
    ["purpose", blueprint.purpose],
    ["codebase", codeSpan(blueprint.codebase)],
    ["venv", codeSpan(blueprint.venv)],
    ["config", blueprint.config === null ? "none" : codeSpan(blueprint.config)],
    ["command", fencedBlock(blueprint.command)],
    ["resultDir", codeSpan(blueprint.resultDir)],
    ["timeBudget", timeBudgetText(blueprint)],
    ["notes", blueprint.notes],
  ];
  const body = sections.map(([key, text]) => `## ${a3rSectionTitles[key]}\n\n${text}${text === "" ? "" : "\n"}`).join("\n");
  return `---\n${renderFrontMatter(blueprint)}---\n# Experiment Blueprint: ${blueprint.id}\n\n${body}`;
}

function renderFrontMatter(blueprint: Blueprint): string {
  const data: Record<string, unknown> = { a3r: blueprintVersion, id: blueprint.id };
  if (!("mode" in blueprint.frontMatter)) data.mode = blueprint.mode;
  for (const [key, value] of Object.entries(blueprint.frontMatter)) {
    if (key === "a3r" || key === "id") continue;
    data[key] = key === "mode" ? blueprint.mode : value;
  }
  // YAML 1.2 both ways: a string such as "0123" or "2026-01-01" is quoted only when needed
  // and read back as the same string.
  return stringify(data, { version: "1.2", lineWidth: 0 });
}

function timeBudgetText(blueprint: Blueprint): string {
  if (blueprint.timeBudget !== "" && !blueprint.timeBudget.includes("\n")) return blueprint.timeBudget;
  return Number.isFinite(blueprint.timeBudgetMs) ? formatDuration(blueprint.timeBudgetMs) : blueprint.timeBudget;
}

/** A code span long enough that backticks inside the value cannot end it. */
export function codeSpan(value: string): string {
  if (value === "") return "";
  const longest = Math.max(0, ...Array.from(value.matchAll(/`+/g), (match) => match[0].length));
  const ticks = "`".repeat(longest + 1);
  const pad = value.startsWith("`") || value.endsWith("`") ? " " : "";
  return `${ticks}${pad}${value}${pad}${ticks}`;
}

/** A fenced block whose fence is longer than any backtick run in the command. */
export function fencedBlock(command: string): string {
  if (command === "") return "";
  const longest = Math.max(0, ...Array.from(command.matchAll(/`+/g), (match) => match[0].length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}bash\n${command}\n${fence}`;
}
