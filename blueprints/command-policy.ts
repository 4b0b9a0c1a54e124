import { posix } from "node:path";
import { z } from "zod";
import { A3rError } from "../core/errors.ts";
import type { Severity } from "./blueprint.ts";

/**
 * The command policy as data: each rule is a regular expression (its source, so a policy
 * can live in YAML or JSON) tested against every logical line of a blueprint's command.
 *
 * What the policy leaves out: it is a tripwire for plainly destructive commands written
 * into a blueprint, not a sandbox. It cannot see what a script called by the command does,
 * and a determined author can always obfuscate; isolation of runs is the hosts' job.
 */
export interface CommandRule {
  id: string;
  /** RegExp source, compiled with the `m` flag (plus `flags`) against one logical line. */
  pattern: string;
  flags?: string;
  reason: string;
  severity: Severity;
}

export interface CommandViolation {
  ruleId: string;
  reason: string;
  severity: Severity;
  /** The text that matched. */
  match: string;
  /** 0-based line inside the command where the logical line starts. */
  line: number;
}

// A word in command position: line start, after ; & | ( $( or a backtick, or after a
// wrapper such as sudo, nohup, env, timeout or xargs.
// Wrapper options may take a value (`sudo -u root`, `nice -n 19`); the value is optional
// so that a flag right before the command still works.
const start = String.raw`(?:^|[;&|(\x60{]|\$\()\s*(?:(?:sudo|doas|nohup|exec|eval|command|builtin|then|do|else|time|nice|ionice|stdbuf|setsid|unbuffer|chroot\s+\S+|xargs|(?:ba|z|da|k)?sh(?:\s+-c)?|env(?:\s+[A-Za-z_]\w*=\S*)*|timeout\s+\S+)\s+(?:-\S+(?:\s+(?!-)[^\s;&|]+)?\s+)*)*(?:\S*/)?`;
// The rest of one simple command (stops at ; & | so flags are looked for in one command).
const rest = String.raw`[^;&|\n]*`;
const end = String.raw`(?=\s|$|[;&|)\x60])`;
// What `rm -r` must never be pointed at: the root, a home, or a top-level system folder.
const precious = String.raw`(?:/\.?\*?|~/?\*?|\$\{?HOME\}?/?\*?|/(?:bin|boot|dev|etc|home|lib|lib32|lib64|opt|proc|root|sbin|srv|sys|usr|var)/?\*?)`;

export const defaultCommandRules: readonly CommandRule[] = [
  {
    id: "rm-recursive-root",
    pattern: String.raw`${start}rm\b(?=${rest}\s(?:-[a-zA-Z]*[rR]|--recursive))${rest}\s${precious}${end}`,
    reason: "recursive delete of the root, a home folder or a system folder",
    severity: "error",
  },
  {
    id: "rm-no-preserve-root",
    pattern: String.raw`${start}rm\b${rest}--no-preserve-root`,
    reason: "rm --no-preserve-root exists only to delete the whole file system",
    severity: "error",
  },
  {
    id: "find-delete-root",
    pattern: String.raw`${start}find\s+${precious}(?=\s|$)${rest}\s(?:-delete\b|-exec(?:dir)?\s+(?:\S*/)?rm\b)`,
    reason: "find deleting everything under the root, a home folder or a system folder",
    severity: "error",
  },
  {
    id: "rm-glob-in-root",
    pattern: String.raw`${start}cd\s+${precious}\s*(?:&&|;)\s*(?:sudo\s+)?(?:\S*/)?rm\b(?=${rest}\s(?:-[a-zA-Z]*[rR]|--recursive))${rest}\s\*`,
    reason: "recursive delete of everything in the root, a home folder or a system folder",
    severity: "error",
  },
  { id: "mkfs", pattern: String.raw`${start}mkfs(?:\.\w+)?\b`, reason: "formats a file system", severity: "error" },
  {
    id: "dd-to-device",
    pattern: String.raw`${start}dd\b${rest}\bof=/dev/(?!null\b|zero\b|stdout\b|stderr\b)`,
    reason: "dd writing onto a device overwrites a disk",
    severity: "error",
  },
  {
    id: "write-to-disk-device",
    pattern: String.raw`>\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|dm-|md)\w*`,
    reason: "redirecting output onto a disk device overwrites it",
    severity: "error",
  },
  {
    id: "power-off",
    pattern: String.raw`${start}(?:systemctl\s+)?(?:shutdown|reboot|halt|poweroff)${end}`,
    reason: "shuts down or restarts the machine every other run shares",
    severity: "error",
  },
  {
    id: "init-runlevel",
    pattern: String.raw`${start}(?:init|telinit)\s+[06]${end}`,
    reason: "init 0 / init 6 halts or reboots the machine",
    severity: "error",
  },
  {
    id: "write-etc",
    pattern: String.raw`(?:>>?|&>)\s*/etc(?:/|${end})|${start}tee\b${rest}\s/etc(?:/|${end})|${start}(?:cp|mv|install|ln|rsync)\b${rest}\s/etc(?:/\S*)?\s*(?:$|[;&|)])|${start}sed\b(?=${rest}\s-[a-zA-Z]*i)${rest}\s/etc/`,
    reason: "writes system configuration under /etc",
    severity: "error",
  },
  {
    id: "pipe-download-to-shell",
    pattern: String.raw`\b(?:curl|wget)\b[^\n;]*\|\s*(?:(?:sudo|doas)\s+(?:-\S+(?:\s+(?!-)[^\s;&|]+)?\s+)*)?(?:(?:\S*/)?env\s+(?:[A-Za-z_]\w*=\S*\s+)*)?(?:\S*/)?(?:(?:ba|z|da|k|fi)?sh\b|(?:python[\d.]*|perl|ruby|node)(?=\s*(?:-\s*)?(?:$|[;&|)])))|\b(?:ba|z|da|k)?sh\b[^\n;]*(?:<\(|\$\()\s*(?:curl|wget)\b`,
    reason: "runs a script downloaded from the network without reading it",
    severity: "error",
  },
  {
    id: "fork-bomb",
    pattern: String.raw`([\w:]+)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}`,
    reason: "a fork bomb exhausts the process table of the whole machine",
    severity: "error",
  },
  {
    id: "chmod-recursive-root",
    pattern: String.raw`${start}(?:chmod|chown|chgrp)\b(?=${rest}\s(?:-[a-zA-Z]*R|--recursive))${rest}\s${precious}${end}`,
    reason: "recursive permission or owner change of the root or a system folder",
    severity: "error",
  },
  {
    id: "kill-all-processes",
    pattern: String.raw`${start}kill\s+(?:(?:-s\s+\S+|-\S+)\s+)+-1${end}`,
    reason: "kill -1 signals every process the user may signal, the worker included",
    severity: "error",
  },
  {
    id: "sudo",
    pattern: String.raw`(?:^|[;&|(]|\$\()\s*sudo\b`,
    reason: "runs are unattended: sudo would wait for a password that never comes",
    severity: "warning",
  },
];

/**
 * The logical lines of a command (backslash-newline continuations joined), each with the
 * 0-based line it starts on. Quotes are dropped so `rm -rf "/"` reads as `rm -rf /`.
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
    result.push({ text: normalizeForPolicy(buffer + text), line: startLine });
    buffer = "";
  });
  if (buffer !== "") result.push({ text: normalizeForPolicy(buffer), line: startLine });
  return result;
}

/**
 * Spellings that mean the same to a shell read the same to the rules: quotes dropped,
 * `\rm` as `rm`, `${HOME:?}` as `$HOME`, `//` as `/`, and absolute paths with `..`
 * resolved (`/tmp/../` is `/`).
 */
function normalizeForPolicy(text: string): string {
  return text
    .replace(/["']/g, "")
    .replace(/(^|[\s;&|(\x60])\\(?=[A-Za-z])/g, "$1")
    .replace(/\$\{HOME:[?-][^}]*\}/g, "$$HOME")
    .replace(/(^|[\s=])(\/[^\s;&|)\x60]*)/g, (_match, before: string, path: string) => `${before}${normalizeAbsolutePath(path)}`);
}

function normalizeAbsolutePath(path: string): string {
  const trailing = path.length > 1 && path.endsWith("/") ? "/" : "";
  const resolved = posix.normalize(path);
  return resolved === "/" ? "/" : `${resolved.replace(/\/$/, "")}${trailing}`;
}

const compiled = new Map<string, RegExp>();

function compile(rule: CommandRule): RegExp {
  const key = `${rule.flags ?? ""}/${rule.pattern}`;
  let pattern = compiled.get(key);
  if (!pattern) {
    pattern = new RegExp(rule.pattern, `m${(rule.flags ?? "").replace(/[mg]/g, "")}`);
    compiled.set(key, pattern);
  }
  return pattern;
}

/**
 * Longest logical line the rules are run on. Some patterns are quadratic on pathological
 * input, and no real launch command is this long: longer content belongs in a script file.
 */
export const maxCheckedLineLength = 8192;

/** Every rule the command breaks, in rule order, at most once per rule and logical line. */
export function checkCommand(command: string, rules: readonly CommandRule[] = defaultCommandRules): CommandViolation[] {
  const violations: CommandViolation[] = [];
  const lines = logicalLines(command);
  for (const { text, line } of lines) {
    if (text.length > maxCheckedLineLength) {
      violations.push({
        ruleId: "line-too-long",
        reason: `a command line over ${maxCheckedLineLength} characters cannot be checked; put long content in a script file`,
        severity: "error",
        match: `${text.slice(0, 40)}...`,
        line,
      });
    }
  }
  const checked = lines.filter(({ text }) => text.length <= maxCheckedLineLength);
  for (const rule of rules) {
    const pattern = compile(rule);
    for (const { text, line } of checked) {
      const match = pattern.exec(text);
      if (match) violations.push({ ruleId: rule.id, reason: rule.reason, severity: rule.severity, match: match[0].trim(), line });
    }
  }
  return violations;
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
  })
  // Compiled as `checkCommand` will compile it, flags included: `u` refuses escapes that
  // are fine without it, and a rule that compiles here must never throw in an audit.
  .superRefine((rule, context) => {
    try {
      compile(rule);
    } catch {
      context.addIssue({ code: "custom", path: ["pattern"], message: `a valid JavaScript regular expression source with the flags "${rule.flags ?? ""}"` });
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
  return merged;
}

function sameRule(a: CommandRule, b: CommandRule): boolean {
  return a.pattern === b.pattern && (a.flags ?? "") === (b.flags ?? "") && a.reason === b.reason && a.severity === b.severity;
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
