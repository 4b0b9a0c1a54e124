import type { OverrideValue, Overrides } from "./apply-overrides.ts";

/**
 * Typed values for overrides a model proposes (a diagnosis reads a training log, which
 * anyone who can print to it may steer). A proposed value must keep the type of the value
 * it replaces, and a port must be a port number: the port is substituted into commands as
 * `{port}`, so a string there would be shell syntax. Strings may not hold line breaks or
 * NUL (no config value needs them, and they split a command or a YAML line).
 */
export function isPortKey(key: string): boolean {
  return key === "port" || key.endsWith(".port");
}

export function isPortNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535;
}

function typeOf(value: OverrideValue): "number" | "boolean" | "string" {
  return typeof value as "number" | "boolean" | "string";
}

/** One line per proposed value that breaks the rules above; `known` holds the run's current and base values. */
export function overrideValueProblems(proposed: Overrides, known: Overrides): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(proposed)) {
    const shown = JSON.stringify(value).slice(0, 80);
    if (isPortKey(key) && !isPortNumber(value)) {
      problems.push(`${key}=${shown} is not a port number (an integer from 1 to 65535)`);
      continue;
    }
    if (typeof value === "number" && !Number.isFinite(value)) {
      problems.push(`${key}=${shown} is not a finite number`);
      continue;
    }
    if (typeof value === "string" && /[\n\r\0]/.test(value)) {
      problems.push(`${key}=${shown} holds a line break or NUL`);
      continue;
    }
    const before = known[key];
    if (before !== undefined && typeOf(before) !== typeOf(value))
      problems.push(`${key}=${shown} is a ${typeOf(value)} where the run has a ${typeOf(before)} (${String(before)})`);
  }
  return problems;
}
