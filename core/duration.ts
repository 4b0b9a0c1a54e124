/**
 * Durations as people write them in blueprints and topics: "90m", "4h", "1h30m", "2d",
 * "45s", "1500ms", or a bare number of seconds. Returns milliseconds, or undefined when
 * the text is not a duration (the caller names the field in its error).
 */
const unitMs: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  d: 86_400_000,
};

export function parseDuration(text: string | number): number | undefined {
  if (typeof text === "number") return Number.isFinite(text) && text >= 0 ? text * 1000 : undefined;
  const trimmed = text.trim().toLowerCase().replace(/\s+/g, "");
  if (trimmed === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const part = /(\d+(?:\.\d+)?)(ms|sec|min|hr|s|m|h|d)/y;
  let total = 0;
  let index = 0;
  while (index < trimmed.length) {
    part.lastIndex = index;
    const match = part.exec(trimmed);
    if (!match) return undefined;
    total += Number(match[1]) * unitMs[match[2]!]!;
    index = part.lastIndex;
  }
  return total;
}

/** The inverse for display: 5400000 -> "1h30m". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return String(ms);
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let seconds = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [
    ["d", 86_400],
    ["h", 3_600],
    ["m", 60],
    ["s", 1],
  ] as const) {
    if (seconds >= size) {
      parts.push(`${Math.floor(seconds / size)}${unit}`);
      seconds %= size;
    }
  }
  return parts.join("");
}
