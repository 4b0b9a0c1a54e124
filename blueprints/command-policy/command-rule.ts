import type { Severity } from "../../core/severity.ts";

/**
 * The command policy as data: each rule is a regular expression (its source, so a policy
 * can live in YAML or JSON).
 *
 * What the policy leaves out: it is a tripwire for plainly destructive commands written
 * into a blueprint, not a sandbox. It cannot see what a script called by the command does,
 * and a determined author can always obfuscate; isolation of runs is the hosts' job.
 */
export interface CommandRule {
  id: string;
  /** RegExp source, compiled with `flags`. */
  pattern: string;
  flags?: string;
  reason: string;
  severity: Severity;
  /**
   * What the pattern is tested against. "line" (the default): each logical line of the
   * command, quotes dropped. "command": each simple command and pipe join of it, as
   * `lineUnits` writes them (wrappers peeled, `sh -c` payloads unwrapped, paths made
   * canonical), so a pattern anchored with `^` sees only a command word.
   */
  scope?: "line" | "command";
}

export interface CommandViolation {
  ruleId: string;
  reason: string;
  severity: Severity;
  /** The text that matched (for a "command" rule, the whole command unit). */
  match: string;
  /** 0-based line inside the command where the logical line starts. */
  line: number;
}
