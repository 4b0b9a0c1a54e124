import { parseDuration } from "../core/duration.ts";

/**
 * Reading one value out of a section's text. Authors write paths in backticks (a3r), as
 * `- dir: ...` bullets (AgentJet) or inside a sentence; these functions accept all three and
 * return the value alone. Pure: they never look at the file system.
 */

const bulletLine = /^\s*[-*+]\s+(?:\*\*|__)?([A-Za-z_][\w ]*?)(?:\*\*|__)?\s*[:：]\s*(.*?)\s*$/;

/** The value of the first `- key: value` bullet whose key is one of `keys` (any key when empty). */
export function bulletValue(content: string, keys: readonly string[] = []): string | undefined {
  for (const line of content.split("\n")) {
    const match = bulletLine.exec(line);
    if (!match) continue;
    const key = match[1]!.trim().toLowerCase().replace(/\s+/g, "_");
    if (keys.length === 0 || keys.includes(key)) return match[2]!;
  }
  return undefined;
}

/** The text of the first inline code span (`like this`), or undefined. */
export function firstCodeSpan(content: string): string | undefined {
  const match = /(`+)(?!`)([\s\S]*?[^`])\1(?!`)/.exec(content);
  if (!match) return undefined;
  const inner = match[2]!;
  // Markdown strips one space on each side when both are present (`` `x` ``).
  return inner.startsWith(" ") && inner.endsWith(" ") && inner.trim() !== "" ? inner.slice(1, -1) : inner;
}

function unwrap(value: string): string {
  const span = firstCodeSpan(value);
  if (span !== undefined && value.trim().replace(/^`+|`+$/g, "").trim() === span.trim()) return span.trim();
  return value.trim().replace(/^["']|["']$/g, "").trim();
}

const pathKeys = ["dir", "path", "directory", "exe", "python", "venv", "file", "location"];

/**
 * The path a path section holds: a code span first, then a `- dir:`/`- path:` bullet, then
 * the first absolute path in free text, then the first line as written (so the audit can
 * say it is not absolute).
 */
export function extractPath(content: string): string {
  const span = firstCodeSpan(content);
  if (span !== undefined && span.trim() !== "") return span.trim();
  const bullet = bulletValue(content, pathKeys) ?? bulletValue(content);
  if (bullet !== undefined && bullet !== "") return unwrap(bullet);
  const absolute = /(?:^|[\s(:：])((?:\/|~\/)[^\s`'"),;]*)/.exec(content);
  if (absolute) return absolute[1]!.replace(/[.:]+$/, "");
  const firstLine = content.split("\n").find((line) => line.trim() !== "") ?? "";
  return unwrap(firstLine.replace(/^\s*[-*+]\s+/, ""));
}

const noneWords = new Set(["none", "n/a", "na", "null", "-"]);

/** True when a configuration section says there is no file ("none", "N/A", "None (defaults)"). */
export function saysNone(content: string): boolean {
  const value = extractPath(content).toLowerCase().replace(/[.!]+$/, "");
  if (noneWords.has(value)) return true;
  if (/(?:^|\s)\/\S/.test(content) || firstCodeSpan(content) !== undefined) return false;
  const firstWord = /^\s*(?:[-*+]\s+(?:[\w ]+[:：]\s*)?)?([A-Za-z/]+)/.exec(content)?.[1]?.toLowerCase();
  return firstWord !== undefined && noneWords.has(firstWord);
}

/** The text of the first fenced code block, or undefined when there is none. */
export function firstFencedBlock(content: string): string | undefined {
  const lines = content.split("\n");
  const start = lines.findIndex((line) => /^\s*(`{3,}|~{3,})/.test(line));
  if (start === -1) return undefined;
  const indent = /^(\s*)/.exec(lines[start]!)![1]!.length;
  const fence = /^\s*(`{3,}|~{3,})/.exec(lines[start]!)![1]!;
  const inner: string[] = [];
  for (const line of lines.slice(start + 1)) {
    const close = /^\s*(`{3,}|~{3,})\s*$/.exec(line);
    if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length) break;
    // A fence indented under a bullet indents its lines too; take that indent back off.
    inner.push(line.startsWith(" ".repeat(indent)) ? line.slice(indent) : line);
  }
  while (inner.length > 0 && inner[0]!.trim() === "") inner.shift();
  while (inner.length > 0 && inner.at(-1)!.trim() === "") inner.pop();
  return inner.join("\n");
}

/** 0-based line of the first fenced block's first code line inside the section, or 0. */
export function fencedBlockOffset(content: string): number {
  const lines = content.split("\n");
  const start = lines.findIndex((line) => /^\s*(`{3,}|~{3,})/.test(line));
  if (start === -1) return 0;
  let first = start + 1;
  while (first < lines.length && lines[first]!.trim() === "") first += 1;
  return first;
}

/** The command a Command section holds: a fenced block, a `- command:` bullet, or the text. */
export function extractCommand(content: string): string {
  const block = firstFencedBlock(content);
  if (block !== undefined) return block;
  const bullet = bulletValue(content, ["command", "cmd", "launch_command"]);
  if (bullet !== undefined && bullet !== "") return unwrap(bullet);
  const trimmed = content.trim();
  const span = firstCodeSpan(trimmed);
  if (span !== undefined && trimmed === `\`${span}\``) return span.trim();
  return trimmed;
}

const durationRun = /\d+(?:\.\d+)?\s*(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b(?:[\s,]*(?:and\s+)?\d+(?:\.\d+)?\s*(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b)*/i;

/** The time budget as written: a bullet value, a code span or the first line. */
export function extractTimeBudgetText(content: string): string {
  const bullet = bulletValue(content, ["time", "max_time", "budget", "time_budget", "duration", "limit"]) ?? bulletValue(content);
  if (bullet !== undefined && bullet !== "") return unwrap(bullet);
  const span = firstCodeSpan(content);
  if (span !== undefined && span.trim() !== "") return span.trim();
  return (content.split("\n").find((line) => line.trim() !== "") ?? "").trim();
}

/**
 * Milliseconds of a time budget such as "4h", "90m", "1h30m", "4 hours" or "at most 2h";
 * undefined when no duration with a unit is there (a bare "4" is refused: hours or seconds?).
 */
export function parseTimeBudget(text: string): number | undefined {
  const direct = text.trim();
  if (direct === "" || /^\d+(?:\.\d+)?$/.test(direct)) return undefined;
  const exact = parseDuration(direct);
  if (exact !== undefined && exact > 0) return exact;
  const run = durationRun.exec(direct);
  if (!run) return undefined;
  const compact = run[0]
    .toLowerCase()
    .replace(/\band\b|,/g, " ")
    .replace(/milliseconds?/g, "ms")
    .replace(/seconds?|secs?/g, "s")
    .replace(/minutes?|mins?/g, "m")
    .replace(/hours?|hrs?/g, "h")
    .replace(/days?/g, "d")
    .replace(/\s+/g, "");
  const parsed = parseDuration(compact);
  return parsed !== undefined && parsed > 0 ? parsed : undefined;
}
