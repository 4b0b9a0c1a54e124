import { parseDuration } from "../core/duration.ts";

/** Removes trailing characters of `set` (a loop: `/[.:]+$/` is quadratic on long runs). */
export function stripTrailing(text: string, set: string): string {
  let end = text.length;
  while (end > 0 && set.includes(text.charAt(end - 1))) end -= 1;
  return text.slice(0, end);
}

/**
 * Reading one value out of a section's text. Authors write paths in backticks (a3r), as
 * `- dir: ...` bullets (AgentJet) or inside a sentence; these functions accept all three and
 * return the value alone. Pure: they never look at the file system.
 */

/** `- key: value` split by hand: a regular expression here backtracks badly on long lines. */
function splitBullet(line: string): { key: string; value: string } | undefined {
  const trimmed = line.trimStart();
  if (!"-*+".includes(trimmed.charAt(0)) || !/\s/.test(trimmed.charAt(1))) return undefined;
  const rest = trimmed.slice(2);
  const colon = [rest.indexOf(":"), rest.indexOf("：")].filter((index) => index !== -1).sort((a, b) => a - b)[0];
  if (colon === undefined) return undefined;
  const key = stripEmphasis(rest.slice(0, colon).trim()).trim();
  if (key.length > 40 || !/^[A-Za-z_][\w ]*$/.test(key)) return undefined;
  // Numbered bullets (`content 1`, `warning 2`) count as their kind.
  const words = key.toLowerCase().split(" ").filter(Boolean);
  if (words.length > 1 && /^\d+$/.test(words.at(-1)!)) words.pop();
  return { key: words.join("_"), value: rest.slice(colon + 1).trim() };
}

/**
 * Bullets that explain a section rather than hold its value: AlphaAutoResearch's
 * template gives every `[exp_*]` section a `- description:` and a `- hint:`, and may add
 * warnings and notes; their examples (a default path in backticks, a sample command) must
 * never be read as the value.
 */
const annotationKeys = new Set(["description", "hint", "hints", "warning", "note", "notes", "tip", "example"]);

/** The section's lines that are not annotation bullets (nor indented under one), with their 0-based line. One pass. */
function valueLines(content: string): { line: string; at: number }[] {
  const kept: { line: string; at: number }[] = [];
  let skippingDeeperThan = -1;
  content.split("\n").forEach((line, at) => {
    const indent = line.length - line.trimStart().length;
    if (skippingDeeperThan >= 0) {
      if (line.trim() === "" || indent > skippingDeeperThan) return;
      skippingDeeperThan = -1;
    }
    const bullet = splitBullet(line);
    if (bullet && annotationKeys.has(bullet.key)) {
      skippingDeeperThan = indent;
      return;
    }
    kept.push({ line, at });
  });
  return kept;
}

/** The section without its annotation bullets. */
export function withoutAnnotations(content: string): string {
  return valueLines(content)
    .map((entry) => entry.line)
    .join("\n");
}

function stripEmphasis(text: string): string {
  for (const mark of ["**", "__"]) if (text.startsWith(mark) && text.endsWith(mark) && text.length >= 4) return text.slice(2, -2);
  return text;
}

/** The value of the first `- key: value` bullet whose key is one of `keys` (any key when empty). */
export function bulletValue(content: string, keys: readonly string[] = []): string | undefined {
  for (const line of content.split("\n")) {
    const bullet = splitBullet(line);
    if (bullet && (keys.length === 0 || keys.includes(bullet.key))) return bullet.value;
  }
  return undefined;
}

/**
 * The text of the first inline code span (`like this`), or undefined. Scanned by hand in one
 * pass: an opening run of n backticks is closed by the next run of exactly n.
 */
export function firstCodeSpan(content: string): string | undefined {
  const runs: { start: number; length: number }[] = [];
  for (let index = 0; index < content.length; ) {
    if (content.charCodeAt(index) !== 96) {
      index += 1;
      continue;
    }
    const start = index;
    while (index < content.length && content.charCodeAt(index) === 96) index += 1;
    runs.push({ start, length: index - start });
  }
  const nextOfLength = new Map<number, number[]>();
  runs.forEach((run, position) => {
    const list = nextOfLength.get(run.length) ?? [];
    list.push(position);
    nextOfLength.set(run.length, list);
  });
  const cursor = new Map<number, number>();
  for (let position = 0; position < runs.length; position += 1) {
    const run = runs[position]!;
    const list = nextOfLength.get(run.length)!;
    let at = cursor.get(run.length) ?? 0;
    while (at < list.length && list[at]! <= position) at += 1;
    cursor.set(run.length, at);
    const closing = list[at];
    if (closing === undefined) continue;
    const inner = content.slice(run.start + run.length, runs[closing]!.start);
    // Markdown strips one space on each side when both are present (`` `x` ``).
    const span = inner.startsWith(" ") && inner.endsWith(" ") && inner.trim() !== "" ? inner.slice(1, -1) : inner;
    return span;
  }
  return undefined;
}

function unwrap(value: string): string {
  const trimmed = value.trim();
  const span = firstCodeSpan(trimmed);
  if (span !== undefined && trimmed.startsWith("`") && trimmed.endsWith("`") && stripEnds(trimmed, "`").trim() === span.trim()) return span.trim();
  return stripEnds(trimmed, "\"'", 1).trim();
}

/** Removes characters of `set` from both ends (at most `limit` from each); no regex backtracking. */
export function stripEnds(text: string, set: string, limit = Number.POSITIVE_INFINITY): string {
  let start = 0;
  let end = text.length;
  while (start < end && start < limit && set.includes(text.charAt(start))) start += 1;
  while (end > start && text.length - end < limit && set.includes(text.charAt(end - 1))) end -= 1;
  return text.slice(start, end);
}

const pathKeys = ["dir", "path", "directory", "exe", "python", "venv", "file", "location", "content", "value"];

/**
 * The path a path section holds: a code span first, then a `- dir:`/`- path:` bullet, then
 * the first absolute path in free text, then the first line as written (so the audit can
 * say it is not absolute).
 */
export function extractPath(section: string): string {
  const content = withoutAnnotations(section);
  const span = firstCodeSpan(content);
  if (span !== undefined && span.trim() !== "") return span.trim();
  const bullet = bulletValue(content, pathKeys) ?? bulletValue(content);
  if (bullet !== undefined && bullet !== "") return unwrap(bullet);
  const absolute = /(?:^|[\s(:：])((?:\/|~\/)[^\s`'"),;]*)/.exec(content);
  if (absolute) return stripTrailing(absolute[1]!, ".:");
  const firstLine = content.split("\n").find((line) => line.trim() !== "") ?? "";
  return unwrap(firstLine.replace(/^\s*[-*+]\s+/, ""));
}

const noneWords = new Set(["none", "n/a", "na", "null", "-"]);

/** True when a configuration section says there is no file ("none", "N/A", "None (defaults)"). */
export function saysNone(content: string): boolean {
  const value = stripTrailing(extractPath(content).toLowerCase(), ".!");
  if (noneWords.has(value)) return true;
  if (/(?:^|\s)\/\S/.test(content) || firstCodeSpan(content) !== undefined) return false;
  const firstLine = (content.split("\n").find((line) => line.trim() !== "") ?? "").trim();
  const bullet = splitBullet(firstLine);
  const lead = bullet ? bullet.value : "-*+".includes(firstLine.charAt(0)) ? firstLine.slice(1).trim() : firstLine;
  const firstWord = /^[A-Za-z/]+/.exec(lead)?.[0]?.toLowerCase();
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
  const lines = valueLines(content);
  const start = lines.findIndex((entry) => /^\s*(`{3,}|~{3,})/.test(entry.line));
  if (start === -1) return 0;
  let first = start + 1;
  while (first < lines.length && lines[first]!.line.trim() === "") first += 1;
  return lines[first]?.at ?? lines[start]!.at + 1;
}

/** The command a Command section holds: a fenced block, a `- command:` bullet, or the text. */
export function extractCommand(section: string): string {
  const content = withoutAnnotations(section);
  const block = firstFencedBlock(content);
  if (block !== undefined) return block;
  const bullet = bulletValue(content, ["command", "cmd", "launch_command", "content"]);
  if (bullet !== undefined && bullet !== "") return unwrap(bullet);
  const trimmed = content.trim();
  const span = firstCodeSpan(trimmed);
  if (span !== undefined && trimmed === `\`${span}\``) return span.trim();
  return trimmed;
}

const durationRun =
  /\d+(?:\.\d+)?\s*(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b(?:[\s,]*(?:and\s+)?\d+(?:\.\d+)?\s*(?:ms|milliseconds?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b)*/i;

/** The time budget as written: a bullet value, a code span or the first line. */
export function extractTimeBudgetText(section: string): string {
  const content = withoutAnnotations(section);
  const bullet = bulletValue(content, ["time", "max_time", "budget", "time_budget", "duration", "limit", "content"]) ?? bulletValue(content);
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
  // No real budget is longer; the cap also keeps the scan below linear on hostile input.
  if (direct.length > 200) return undefined;
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
