/**
 * Reads training metrics out of log lines, the one place besides the failure classifier that
 * reads foreign text. Formats are data (a list of line parsers) so a blueprint or campaign
 * can add patterns for its trainer without code changes.
 *
 * Recognised by default:
 * - verl / AgentJet lines: `step:12 - reward_mean:0.41 - actor/kl:0.002`
 * - key=value pairs with a step: `step=12 loss=0.31 lr=3e-6`
 * - JSON lines with a numeric `step` (or `global_step`) field
 *
 * Each may follow a progress bar's text on the same line (`… 9.5it/s]step:1 - loss:0.3`: tqdm
 * on stderr rewrites its line with `\r` and a metric printed on stdout lands after it): a
 * step or key only needs no name character right before it. Every default pattern is linear
 * in the line's length (no nested quantifiers, a lookbehind instead of scanning inside a
 * word, a number without ambiguous repeats), and the lines are cut to a bounded length first
 * (worker/supervise/line-splitter.ts).
 */
export interface MetricPoint {
  step: number;
  values: Record<string, number>;
  /** When the step happened (ISO), when the source says; otherwise the moment it was read. */
  time?: string;
}

export interface LogMetricPattern {
  /** A regular expression source with named groups `step` and any number of `key`/`value` repeats via `pair`. */
  name: string;
  /** Matches a whole line and captures the step. */
  line: string;
  /** Matches one key/value pair inside the line: named groups `key` and `value`. */
  pair: string;
}

const number = String.raw`[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|infinity)`;
/** Not inside a name: what may precede a step or a key (a space, `]`, `|`, the line's start...). */
const notInName = String.raw`(?<![\w/.@-])`;

export const defaultLogMetricPatterns: LogMetricPattern[] = [
  {
    name: "verl",
    line: String.raw`${notInName}step:\s*(?<step>\d+)\s+-\s+`,
    pair: String.raw`${notInName}(?<key>[A-Za-z_][\w/.@-]*):\s*(?<value>${number})(?=\s+-\s+|\s*$)`,
  },
  {
    name: "key-value",
    line: String.raw`${notInName}(?:global_)?step\s*=\s*(?<step>\d+)\b`,
    pair: String.raw`${notInName}(?<key>[A-Za-z_][\w/.@-]*)\s*=\s*(?<value>${number})(?=[\s,|]|$)`,
  },
];

function toNumber(text: string): number {
  const lower = text.toLowerCase().replace(/^\+/, "");
  if (lower === "nan" || lower === "-nan") return Number.NaN;
  if (lower === "inf" || lower === "infinity") return Number.POSITIVE_INFINITY;
  if (lower === "-inf" || lower === "-infinity") return Number.NEGATIVE_INFINITY;
  return Number(text);
}

function parseJsonLine(line: string): MetricPoint | undefined {
  let trimmed = line.trim();
  if (!trimmed.endsWith("}")) return undefined;
  // After a progress bar's text: the object starts at its first `{"`.
  if (!trimmed.startsWith("{")) trimmed = trimmed.slice(Math.max(0, trimmed.indexOf('{"')));
  if (!trimmed.startsWith("{")) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const record = parsed as Record<string, unknown>;
  const step = record.step ?? record.global_step;
  if (typeof step !== "number" || !Number.isInteger(step) || step < 0) return undefined;
  const values: Record<string, number> = {};
  for (const [key, value] of Object.entries(record)) {
    if (key === "step" || key === "global_step" || key === "time") continue;
    if (typeof value === "number") values[key] = value;
  }
  return { step, values };
}

export interface CompiledPatterns {
  patterns: Array<{ name: string; line: RegExp; pair: RegExp }>;
}

export function compileLogMetricPatterns(patterns: LogMetricPattern[] = defaultLogMetricPatterns): CompiledPatterns {
  return {
    patterns: patterns.map((pattern) => ({
      name: pattern.name,
      line: new RegExp(pattern.line, "i"),
      pair: new RegExp(pattern.pair, "g"),
    })),
  };
}

const defaultCompiled = compileLogMetricPatterns();

/** Terminal control sequences (colours, cursor moves, erase line) a progress bar writes around its text. */
const ansiSequence = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-Z\\-_]/g;

/** Returns the metrics on one log line, or undefined when it carries none. */
export function parseMetricLine(rawLine: string, compiled: CompiledPatterns = defaultCompiled): MetricPoint | undefined {
  const line = rawLine.includes("\u001b") ? rawLine.replace(ansiSequence, "") : rawLine;
  const fromJson = parseJsonLine(line);
  if (fromJson) return fromJson;
  for (const pattern of compiled.patterns) {
    const lineMatch = pattern.line.exec(line);
    const stepText = lineMatch?.groups?.step;
    if (!lineMatch || stepText === undefined) continue;
    const values: Record<string, number> = {};
    // The step itself is not a metric: look for pairs in the rest of the line only.
    const rest = `${line.slice(0, lineMatch.index)} ${line.slice(lineMatch.index + lineMatch[0].length)}`;
    for (const pair of rest.matchAll(pattern.pair)) {
      const key = pair.groups?.key;
      const value = pair.groups?.value;
      if (!key || value === undefined || /^(global_)?step$/i.test(key)) continue;
      values[key] = toNumber(value);
    }
    if (Object.keys(values).length > 0) return { step: Number(stepText), values };
  }
  return undefined;
}
