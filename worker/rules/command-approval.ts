import { allowPatternLimits, wholeLinePattern } from "../../blueprints/index.ts";

/**
 * Whether a command a language model proposed may run without a person: the same rule the
 * leader applies to a planner's blueprints (leader/graph/graph-steps.ts `commandsAddedBy`).
 * Each non-empty line of the proposal must be a line of the blueprint's own command, word
 * for word, or match one of the campaign's `commands.allow` patterns as a whole line
 * (carried in the blueprint's front matter as `command_allow`). A line with anything the
 * shell reads as more than words (`;` `&` `|` `` ` `` `$` `<` `>` quotes, a backslash,
 * `#`, parentheses or braces) always needs a person, however permissive the pattern, so a
 * pattern cannot carry a second command. The model saw the failing program's log, which
 * an attacker can write: its command is untrusted until one of these holds.
 *
 * Overrides of config values are not commands: they stay automatic (worker/recover/diagnose.ts
 * checks their shape); overrides that rewrite the command line are judged here like a new
 * command, line by line (worker/recover/override-text.ts).
 */
const maxAllowedLineLength = 512;
const shellSyntax = /[;&|`$<>"'\\#(){}\n]/;

export interface CommandVerdict {
  /** True when every line is the blueprint's own or allowed by a pattern. */
  automatic: boolean;
  /** The lines a person must approve. */
  unapprovedLines: string[];
}

function linesOf(command: string): string[] {
  return command
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

export function judgeProposedCommand(proposed: string, blueprintCommand: string, allow: readonly string[] = []): CommandVerdict {
  const known = new Set(linesOf(blueprintCommand));
  const patterns = compileAllowPatterns(allow);
  const unapprovedLines = linesOf(proposed).filter((line) => !known.has(line) && !allowedByPattern(line, patterns));
  return { automatic: unapprovedLines.length === 0, unapprovedLines };
}

/** The blueprint's `command_allow` (regular expression sources); [] when absent. Bad patterns are skipped. */
export function commandAllowOf(frontMatter: Record<string, unknown>): string[] {
  const value = frontMatter.command_allow;
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string" && item.length > 0) : [];
}

function compileAllowPatterns(allow: readonly string[]): { test(line: string): boolean }[] {
  const patterns: { test(line: string): boolean }[] = [];
  // Past the cap the rest allow nothing: the topic's own check refuses so many, naming the cap.
  for (const source of allow.slice(0, allowPatternLimits.maxPatterns)) {
    try {
      // Linear-time: the proposed lines come from a model that read attacker-written logs.
      patterns.push(wholeLinePattern(source));
    } catch {
      // An invalid pattern allows nothing; the topic's own check reports it to the person who wrote it.
    }
  }
  return patterns;
}

function allowedByPattern(line: string, patterns: readonly { test(line: string): boolean }[]): boolean {
  if (line.length > maxAllowedLineLength || shellSyntax.test(line)) return false;
  return patterns.some((pattern) => pattern.test(line));
}
