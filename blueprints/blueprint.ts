import type { Severity } from "../core/severity.ts";

/**
 * The typed form of an experiment blueprint, the same whichever way the markdown was
 * written (a3r sections with front matter, or AgentJet `[exp_*]` sections).
 *
 * What the contract leaves out: the title line and any prose written around a path or
 * outside the command's code block are not kept (they carry no machine meaning), and the
 * command is reference only: the worker may adapt it.
 */
export type BlueprintMode = "swarm" | "classic";

export type BlueprintFormat = "a3r" | "agentjet";

/** The eight sections, named by the Blueprint field each one fills. */
export type SectionKey = "purpose" | "codebase" | "venv" | "config" | "command" | "resultDir" | "timeBudget" | "notes";

export const sectionKeys: readonly SectionKey[] = ["purpose", "codebase", "venv", "config", "command", "resultDir", "timeBudget", "notes"];

export interface Blueprint {
  /** Unique in a campaign; the idempotency key of its run. */
  id: string;
  mode: BlueprintMode;
  purpose: string;
  /** Absolute path of the code to run. */
  codebase: string;
  /** Absolute path of the interpreter or environment. */
  venv: string;
  /** Absolute path of the configuration file, or null when the blueprint says "none". */
  config: string | null;
  command: string;
  resultDir: string;
  /** The time budget in milliseconds (NaN only in a blueprint an audit has flagged). */
  timeBudgetMs: number;
  /** The time budget as written, e.g. "4h". */
  timeBudget: string;
  notes: string;
  /** Every front-matter field, the unknown ones too, so they survive a round trip. */
  frontMatter: Record<string, unknown>;
  format: BlueprintFormat;
  file?: string;
  /**
   * 1-based line numbers: section headings under their field name (`command`,
   * `resultDir` ...), where each value starts under `<field>.value` (for the command, its
   * first line inside the code block), front-matter fields under their dotted path (`id`,
   * `metric.goal`), `title` for the `#` heading and `frontMatter` for the opening `---`.
   */
  lines: Record<string, number>;
}

export type { Severity } from "../core/severity.ts";

/**
 * One problem an audit found. `line` is 1-based; 0 means the file as a whole. `code` is a
 * stable string from `findingCodes`; `hint` says how to fix it in one sentence. The same
 * shape as campaign/finding.ts, so the CLI prints and counts both the same way.
 */
export interface Finding {
  file: string;
  line: number;
  severity: Severity;
  code: string;
  message: string;
  hint: string;
}

/** The name used for `file` when text was given without one. */
export const anonymousFile = "<input>";
