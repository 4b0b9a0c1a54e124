import type { Finding, Severity } from "./blueprint.ts";
import type { FindingCode } from "./finding-codes.ts";

/** A finding before it knows its file: what the pure readers return. */
export interface Problem {
  code: FindingCode;
  line: number;
  severity: Severity;
  message: string;
  hint: string;
}

export function problem(code: FindingCode, line: number, message: string, hint: string, severity: Severity = "error"): Problem {
  return { code, line, severity, message, hint };
}

export function toFinding(file: string, item: Problem): Finding {
  return { file, line: item.line, severity: item.severity, code: item.code, message: item.message, hint: item.hint };
}

export function hasErrors(items: readonly { severity: Severity }[]): boolean {
  return items.some((item) => item.severity === "error");
}

/** 1-based line of a character offset. */
export function lineOfOffset(text: string, offset: number): number {
  let line = 1;
  const end = Math.min(offset, text.length);
  for (let index = 0; index < end; index += 1) if (text.charCodeAt(index) === 10) line += 1;
  return line;
}
