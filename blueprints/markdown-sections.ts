import type { SectionKey } from "./blueprint.ts";

/** One `##` section of a blueprint body, with its 1-based heading line in the file. */
export interface RawSection {
  heading: string;
  /** The section it fills, or undefined for a heading that is not a blueprint section. */
  key: SectionKey | undefined;
  /** True when the heading is written the AgentJet way (`[exp_purpose]`). */
  agentjet: boolean;
  line: number;
  /** The text under the heading, blank lines at both ends removed. */
  content: string;
  /** 1-based line of the first non-blank content line (the heading line when empty). */
  contentLine: number;
}

export interface SplitBody {
  title: { text: string; line: number } | undefined;
  sections: RawSection[];
  /** 1-based line just past the last line of the body. */
  endLine: number;
}

const a3rHeadings: Record<string, SectionKey> = {
  purpose: "purpose",
  codebase: "codebase",
  "virtual environment": "venv",
  configuration: "config",
  command: "command",
  "result directory": "resultDir",
  "time budget": "timeBudget",
  "additional notes": "notes",
  "other notes": "notes",
  notes: "notes",
};

const agentjetHeadings: Record<string, SectionKey> = {
  exp_purpose: "purpose",
  exp_codebase_dir: "codebase",
  exp_venv_exe: "venv",
  exp_yaml_path: "config",
  exp_launch_command: "command",
  exp_result_dir: "resultDir",
  exp_max_time: "timeBudget",
  other_notes: "notes",
};

/** The a3r heading of each section, in the order render writes them. */
export const a3rSectionTitles: Record<SectionKey, string> = {
  purpose: "Purpose",
  codebase: "Codebase",
  venv: "Virtual Environment",
  config: "Configuration",
  command: "Command",
  resultDir: "Result Directory",
  timeBudget: "Time Budget",
  notes: "Additional Notes",
};

export function classifyHeading(heading: string): { key: SectionKey | undefined; agentjet: boolean } {
  const bracket = /\[\s*(exp_[a-z_]+|other_notes)\s*\]/i.exec(heading);
  if (bracket) return { key: agentjetHeadings[bracket[1]!.toLowerCase()], agentjet: true };
  // "Time Budget (hard kill)" and "1. Purpose:" still name their section. Plain string
  // steps, no backtracking regex: a heading line can be as long as the file.
  let plain = heading.trim().replace(/^\d+[.)]\s*/, "");
  if (plain.endsWith(")") && plain.includes("(")) plain = plain.slice(0, plain.indexOf("(")).trimEnd();
  if (plain.endsWith(":") || plain.endsWith(".")) plain = plain.slice(0, -1).trimEnd();
  plain = plain.toLowerCase().split(/\s+/).join(" ");
  return { key: a3rHeadings[plain], agentjet: false };
}

const fenceOpen = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Splits markdown into its `#` title and `##` sections. Lines inside fenced code blocks
 * are never headings: a shell comment `## step 2` in a command must not cut the section.
 */
export function splitSections(body: string, firstLine: number): SplitBody {
  const lines = body.split("\n");
  const sections: RawSection[] = [];
  let title: SplitBody["title"];
  let current: { heading: string; line: number; lines: string[]; startLine: number } | undefined;
  let fence: string | undefined;

  const close = (): void => {
    if (!current) return;
    const { content, offset } = trimBlankLines(current.lines);
    const { key, agentjet } = classifyHeading(current.heading);
    sections.push({
      heading: current.heading,
      key,
      agentjet,
      line: current.line,
      content,
      contentLine: content === "" ? current.line : current.startLine + offset,
    });
  };

  lines.forEach((text, index) => {
    const lineNumber = firstLine + index;
    if (fence !== undefined) {
      if (isFenceClose(text, fence)) fence = undefined;
      current?.lines.push(text);
      return;
    }
    const opening = fenceOpen.exec(text);
    if (opening) {
      fence = opening[1];
      current?.lines.push(text);
      return;
    }
    const level = headingLevel(text);
    if (level === 2) {
      close();
      current = { heading: headingText(text, 2), line: lineNumber, lines: [], startLine: lineNumber + 1 };
      return;
    }
    if (level === 1 && title === undefined && current === undefined) {
      title = { text: headingText(text, 1), line: lineNumber };
      return;
    }
    current?.lines.push(text);
  });
  close();
  const endLine = firstLine + lines.length - (lines.at(-1) === "" ? 1 : 0);
  return { title, sections, endLine };
}

function isFenceClose(text: string, fence: string): boolean {
  const match = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(text);
  return match !== null && match[1]![0] === fence[0] && match[1]!.length >= fence.length;
}

function trimBlankLines(lines: string[]): { content: string; offset: number } {
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start]!.trim() === "") start += 1;
  while (end > start && lines[end - 1]!.trim() === "") end -= 1;
  return { content: lines.slice(start, end).join("\n").trimEnd(), offset: start };
}

/** 1 for `# x`, 2 for `## x`, 0 otherwise (three or more #, or no space after them). */
function headingLevel(line: string): number {
  let count = 0;
  while (line.charAt(count) === "#") count += 1;
  if (count === 0 || count > 2) return 0;
  const next = line.charAt(count);
  return next === "" || next === " " || next === "\t" || (count === 2 && next !== "") ? count : 0;
}

/** The heading's text without the #s and an optional closing `##` sequence. */
function headingText(line: string, level: number): string {
  let text = line.slice(level).trim();
  let end = text.length;
  while (end > 0 && text.charAt(end - 1) === "#") end -= 1;
  if (end < text.length && (end === 0 || text.charAt(end - 1) === " ")) text = text.slice(0, end).trimEnd();
  return text;
}
