import type { OverrideValue, Overrides } from "../../blueprints/index.ts";

/** What a recovery changed in a run's overrides, written to attempts.md as a diff. */
export interface OverrideChange {
  key: string;
  from: OverrideValue | undefined;
  to: OverrideValue | undefined;
}

/** What differs between two override sets, for attempts.md. */
export function diffOverrides(before: Overrides, after: Overrides): OverrideChange[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.filter((key) => before[key] !== after[key]).map((key) => ({ key, from: before[key], to: after[key] }));
}

/** A unified-diff-style block a person reads in attempts.md. */
export function formatOverrideDiff(changes: OverrideChange[], extra: { commandBefore?: string; commandAfter?: string } = {}): string {
  const lines: string[] = [];
  for (const change of changes) {
    if (change.from !== undefined) lines.push(`- ${change.key}: ${String(change.from)}`);
    if (change.to !== undefined) lines.push(`+ ${change.key}: ${String(change.to)}`);
  }
  if (extra.commandBefore !== undefined && extra.commandAfter !== undefined && extra.commandBefore !== extra.commandAfter) {
    for (const line of extra.commandBefore.split("\n")) lines.push(`- command: ${line}`);
    for (const line of extra.commandAfter.split("\n")) lines.push(`+ command: ${line}`);
  }
  return lines.length === 0 ? "(no change to the configuration)" : `\`\`\`diff\n${lines.join("\n")}\n\`\`\``;
}
