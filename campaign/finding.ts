/**
 * One thing an audit found, shaped exactly like the findings of `blueprints/` so that the
 * CLI prints and counts both the same way. `line` is 1-based; 0 means the file as a whole
 * (a missing file, a folder). `code` is a stable string people can search for.
 */
export interface Finding {
  file: string;
  line: number;
  severity: "error" | "warning";
  code: string;
  message: string;
  hint: string;
}

export interface FindingSummary {
  errors: number;
  warnings: number;
}

export function summarizeFindings(findings: readonly Finding[]): FindingSummary {
  let errors = 0;
  let warnings = 0;
  for (const finding of findings) {
    if (finding.severity === "error") errors += 1;
    else warnings += 1;
  }
  return { errors, warnings };
}

/** Orders findings by file, then line, so output is stable between runs. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return [...findings].sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
}

/** `file:line: severity code message` and an indented hint, the way compilers print. */
export function formatFinding(finding: Finding): string {
  const where = finding.line > 0 ? `${finding.file}:${finding.line}` : finding.file;
  const head = `${where}: ${finding.severity} ${finding.code} ${finding.message}`;
  return finding.hint ? `${head}\n  hint: ${finding.hint}` : head;
}

/**
 * A problem met while reading a record file: the reader keeps going and lists it, the
 * audit decides how bad it is. `torn` marks an unterminated last line (a crash during an
 * append), which is expected after a crash and never fatal.
 */
export interface RecordProblem {
  file: string;
  line: number;
  code: string;
  message: string;
  torn?: boolean;
}
