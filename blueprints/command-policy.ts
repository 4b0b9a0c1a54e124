import { posix } from "node:path";
import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import type { CommandRule, CommandViolation } from "./command-policy/command-rule.ts";
import { defaultCommandRules } from "./command-policy/default-rules.ts";
import { LinearRegex, LinearRegexError } from "./command-policy/linear-regex.ts";
import { anyMark } from "./command-policy/protected-paths.ts";
import { lineUnits, type ShellState } from "./command-policy/shell-units.ts";

export type { CommandRule, CommandViolation } from "./command-policy/command-rule.ts";
export { defaultCommandRules } from "./command-policy/default-rules.ts";

/*
 * The command policy: a tripwire for plainly destructive commands in a blueprint, not a
 * sandbox (command-policy/README.md). A command is split into logical lines; each line is
 * cut once into command units (command-policy/shell-units.ts) that the default rules match
 * with patterns proven linear, while a campaign's own rules run on a linear-time engine.
 * Every check is bounded: an over-long or over-complex line is reported, not matched.
 */

/**
 * The logical lines of a command (backslash-newline continuations joined), each with the
 * 0-based line it starts on.
 */
function logicalLines(command: string): { text: string; line: number }[] {
  const physical = command.split("\n");
  const result: { text: string; line: number }[] = [];
  let buffer = "";
  let startLine = 0;
  physical.forEach((text, index) => {
    if (buffer === "") startLine = index;
    if (text.endsWith("\\")) {
      buffer += `${text.slice(0, -1)} `;
      return;
    }
    result.push({ text: buffer + text, line: startLine });
    buffer = "";
  });
  if (buffer !== "") result.push({ text: buffer, line: startLine });
  return result;
}

/**
 * What a "line" rule reads: spellings that mean the same to a shell read the same: quotes
 * dropped (`rm -rf "/"` reads as `rm -rf /`), `\rm` as `rm`, `${HOME:?}` as `$HOME`, and
 * absolute paths normalized (`/tmp/../` is `/`). Each replacement is one linear pass.
 */
function lineText(text: string): string {
  return text
    .replace(/["']/g, "")
    .replace(/(^|[\s;&|(\x60])\\(?=[A-Za-z])/g, "$1")
    .replace(/\$\{HOME:[?-][^}]{0,256}\}/g, "$$HOME")
    .replace(/(^|[\s=])(\/[^\s;&|)\x60]*)/g, (_match, before: string, path: string) => `${before}${normalizeAbsolutePath(path)}`);
}

function normalizeAbsolutePath(path: string): string {
  const trailing = path.length > 1 && path.endsWith("/") ? "/" : "";
  const resolved = posix.normalize(path);
  return resolved === "/" ? "/" : `${resolved.replace(/\/$/, "")}${trailing}`;
}

/** Something that finds a rule's match in a text: V8's engine for the defaults, the linear one for the rest. */
interface Matcher {
  exec(text: string): { index: number; 0?: string; text?: string } | null | undefined;
  /** The linear engine's NFA size (a campaign rule): its cost per character of text. */
  states?: number;
}

/**
 * Caps on a campaign's own rules (a topic's `commands.rules`, a blueprint's
 * `command_rules`), which run on the linear engine at (NFA states) x (text length):
 * how many rules, how long a pattern, how many states they have in all (checked when they
 * are loaded), and how many states x characters one `checkCommand` may spend on them (a
 * long command against many big rules is refused as an error rather than read for seconds).
 */
export const campaignRuleLimits = {
  maxRules: 32,
  maxPatternLength: 2000,
  maxStates: 4000,
  maxWork: 2 ** 26,
};

const compiled = new Map<string, Matcher>();
const defaultKeys = new Set(defaultCommandRules.map((rule) => ruleKey(rule)));

function ruleKey(rule: CommandRule): string {
  return `${rule.scope ?? "line"}/${rule.flags ?? ""}/${rule.pattern}`;
}

/**
 * The defaults run on V8's engine: recheck proves each free of super-linear backtracking
 * (command-policy-redos.test.ts). Any other rule comes from a topic or a blueprint, so it
 * runs on the linear-time engine, and one it cannot run is refused when it is loaded.
 */
function compile(rule: CommandRule): Matcher {
  const key = ruleKey(rule);
  let matcher = compiled.get(key);
  if (!matcher) {
    const flags = (rule.flags ?? "").replace(/[gy]/g, "");
    if (defaultKeys.has(key)) matcher = new RegExp(rule.pattern, flags);
    else {
      // Syntax errors are reported as JavaScript would, before the linear engine's own refusals.
      new RegExp(rule.pattern, flags);
      const linear = new LinearRegex(rule.pattern, flags);
      matcher = { exec: (text) => linear.exec(text), states: linear.stateCount };
    }
    compiled.set(key, matcher);
  }
  return matcher;
}

/**
 * Longest logical line the rules are run on: no real launch command is this long (longer
 * content belongs in a script file), and it bounds what one check costs.
 */
export const maxCheckedLineLength = 8192;

/** Every rule the command breaks, in rule order, at most once per rule and logical line. */
export function checkCommand(command: string, rules: readonly CommandRule[] = defaultCommandRules): CommandViolation[] {
  const violations: CommandViolation[] = [];
  const state: ShellState = { downloaded: new Set() };
  // Units as the defaults read them (with protected-paths.ts's marks) and as written.
  const checked: { text: string; units: string[]; plainUnits: string[]; unitLength: number; line: number }[] = [];
  for (const { text, line } of logicalLines(command)) {
    if (text.length > maxCheckedLineLength) {
      violations.push({
        ruleId: "line-too-long",
        reason: `a command line over ${maxCheckedLineLength} characters cannot be checked; put long content in a script file`,
        severity: "error",
        match: `${text.slice(0, 40)}...`,
        line,
      });
      continue;
    }
    const units = lineUnits(text, state);
    if (units.tooComplex !== undefined) {
      violations.push({
        ruleId: "command-too-complex",
        reason: `a command line that cannot be checked: ${units.tooComplex}; put it in a script file`,
        severity: "error",
        match: `${text.slice(0, 40)}${text.length > 40 ? "..." : ""}`,
        line,
      });
    }
    const plainUnits = units.texts.map((unit) => unit.replace(anyMark, ""));
    const unitLength = plainUnits.reduce((sum, unit) => sum + unit.length + 1, 0);
    checked.push({ text: lineText(text), units: units.texts, plainUnits, unitLength, line });
  }
  // States x characters the campaign's rules have read; past the cap they stop, with an error.
  let work = 0;
  let exhausted = false;
  for (const rule of rules) {
    const pattern = compile(rule);
    const marked = defaultKeys.has(ruleKey(rule));
    for (const { text, units, plainUnits, unitLength, line } of checked) {
      if (pattern.states !== undefined) {
        if (exhausted) break;
        const length = rule.scope === "command" ? unitLength : text.length;
        work += pattern.states * length;
        if (work > campaignRuleLimits.maxWork) {
          exhausted = true;
          violations.push(tooCostly(rule, pattern.states, length, line));
          break;
        }
      }
      const match = rule.scope === "command" ? firstUnitMatch(pattern, marked ? units : plainUnits) : matchedText(pattern, text);
      if (match !== undefined) violations.push({ ruleId: rule.id, reason: rule.reason, severity: rule.severity, match, line });
    }
  }
  return violations;
}

function tooCostly(rule: CommandRule, states: number, length: number, line: number): CommandViolation {
  return {
    ruleId: "campaign-rules-too-costly",
    reason: `the campaign's rules would cost more than the cap of ${campaignRuleLimits.maxWork} NFA states x characters in one check; rule "${rule.id}" (${states} states) reached it on ${length} characters of this line: shorten the command (a script file) or simplify the campaign's rules`,
    severity: "error",
    match: rule.id,
    line,
  };
}

function matchedText(pattern: Matcher, text: string): string | undefined {
  const match = pattern.exec(text);
  if (!match) return undefined;
  return (match[0] ?? match.text ?? "").trim();
}

function firstUnitMatch(pattern: Matcher, units: readonly string[]): string | undefined {
  for (const unit of units) {
    if (!pattern.exec(unit)) continue;
    const plain = unit.replace(anyMark, "");
    return plain.length > 200 ? `${plain.slice(0, 200)}...` : plain;
  }
  return undefined;
}

export const commandRuleSchema = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "kebab-case letters and digits"),
    pattern: z.string().min(1),
    flags: z
      .string()
      .regex(/^[imsu]*$/, "only the flags i, m, s and u")
      .optional(),
    reason: z.string().min(1),
    severity: z.enum(["error", "warning"]),
    scope: z.enum(["line", "command"]).optional(),
  })
  // Compiled as `checkCommand` will compile it, flags included: `u` refuses escapes that
  // are fine without it, and a rule that compiles here must never throw in an audit. A
  // campaign's rule must also fit the linear-time engine, so no pattern can hang a check.
  .superRefine((rule, context) => {
    if (rule.pattern.length > campaignRuleLimits.maxPatternLength && !defaultKeys.has(ruleKey(rule))) {
      context.addIssue({
        code: "custom",
        path: ["pattern"],
        message: `rule "${rule.id}" has a pattern of ${rule.pattern.length} characters, over the cap of ${campaignRuleLimits.maxPatternLength}`,
      });
      return;
    }
    try {
      compile(rule);
    } catch (error) {
      context.addIssue({
        code: "custom",
        path: ["pattern"],
        message:
          error instanceof LinearRegexError
            ? `rule "${rule.id}" cannot be checked in linear time: its pattern has ${error.message}; write it without backreferences, lookarounds and repeats of groups that repeat or alternate (a3r runs campaign rules on a linear-time engine)`
            : `a valid JavaScript regular expression source with the flags "${rule.flags ?? ""}"`,
      });
    }
  });

/**
 * A campaign's policy: the defaults plus its own rules. An extension can only add: a rule
 * whose id is a default's (or repeats within the extension) is refused, because replacing
 * a default by the same id is the way to silently weaken it. Re-adding a rule identical to
 * a default is harmless and ignored, so merging twice gives the same policy.
 */
export function mergeCommandPolicy(defaults: readonly CommandRule[], extra: unknown): CommandRule[] {
  const parsed = z.array(commandRuleSchema).safeParse(extra);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue ? issue.path.join(".") : "";
    throw new A3rError("CONFIG_INVALID", `command policy extension is invalid at ${path || "(root)"}: ${issue?.message ?? "unknown"}`, {
      where: path || undefined,
      hint: "give a list of rules {id, pattern, reason, severity}; an extension can only add rules, never drop or change one",
    });
  }
  const byId = new Map(defaults.map((rule) => [rule.id, rule] as const));
  const merged = [...defaults];
  const seen = new Set<string>();
  for (const rule of parsed.data) {
    const existing = byId.get(rule.id);
    if (existing && sameRule(existing, rule)) continue;
    if (existing || seen.has(rule.id)) {
      throw new A3rError("CONFIG_INVALID", `command policy extension redefines rule "${rule.id}"`, {
        where: rule.id,
        hint: "a campaign may add rules but never override or drop a default one: give your rule a new id",
      });
    }
    seen.add(rule.id);
    merged.push({ ...rule });
  }
  // The campaign's rules in all, those `defaults` already held included (a topic's, under a blueprint's).
  refuseOverCaps(merged.filter((rule) => !defaultKeys.has(ruleKey(rule))));
  return merged;
}

/** Throws when a campaign's own rules pass `campaignRuleLimits`' count or total states, naming the rule that does. */
function refuseOverCaps(campaignRules: readonly CommandRule[]): void {
  const hint = "a campaign's rules are a few short patterns: merge rules that name the same thing, or drop the least useful";
  if (campaignRules.length > campaignRuleLimits.maxRules) {
    const rule = campaignRules[campaignRuleLimits.maxRules]!;
    throw new A3rError(
      "CONFIG_INVALID",
      `command policy extension has ${campaignRules.length} rules, over the cap of ${campaignRuleLimits.maxRules} (rule "${rule.id}" is past it)`,
      {
        where: rule.id,
        hint,
      },
    );
  }
  let states = 0;
  for (const rule of campaignRules) {
    states += compile(rule).states ?? 0;
    if (states > campaignRuleLimits.maxStates) {
      throw new A3rError(
        "CONFIG_INVALID",
        `command policy extension: rule "${rule.id}" brings the campaign's rules to ${states} NFA states, over the cap of ${campaignRuleLimits.maxStates} (a check costs states x text length)`,
        { where: rule.id, hint },
      );
    }
  }
}

function sameRule(a: CommandRule, b: CommandRule): boolean {
  return (
    a.pattern === b.pattern &&
    (a.flags ?? "") === (b.flags ?? "") &&
    a.reason === b.reason &&
    a.severity === b.severity &&
    (a.scope ?? "line") === (b.scope ?? "line")
  );
}

/**
 * The rules a blueprint is checked against: `base` plus the campaign's own rules that the
 * blueprint carries in its front matter (`command_rules`, written by the leader from the
 * topic's `commands.rules`), so every audit of the blueprint (the leader's, the worker's
 * on any host, `a3r blueprint validate`) holds it to the campaign's policy. Rules can
 * only be added (see `mergeCommandPolicy`), so a blueprint cannot weaken its own check.
 */
export function blueprintCommandRules(frontMatter: Record<string, unknown>, base: readonly CommandRule[] = defaultCommandRules): CommandRule[] {
  return frontMatter.command_rules === undefined ? [...base] : mergeCommandPolicy(base, frontMatter.command_rules);
}
