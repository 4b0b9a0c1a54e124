/**
 * JSON as Python's `json` module writes it by default: `NaN`, `Infinity` and `-Infinity`
 * are bare tokens (`json.dumps(float("nan"))` is `NaN`), which `JSON.parse` refuses. A
 * training run's metrics lines carry them exactly when they matter (a diverged loss), so
 * every reader of metrics lines parses with this, and the worker writes its own
 * metrics.jsonl the same way: a NaN loss stays a NaN loss, not a `null`.
 *
 * Left out: other Python-isms (single quotes, `True`, trailing commas): those are not JSON
 * that `json.dumps` writes.
 */
const tokens: Record<string, number> = { NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, "-Infinity": Number.NEGATIVE_INFINITY };
const marker = "\u0000a3r-non-finite:";

/** Parses JSON text that may hold `NaN`, `Infinity` or `-Infinity` outside strings; throws as JSON.parse does. */
export function parsePythonJson(text: string): unknown {
  const quoted = quoteNonFinite(text);
  if (quoted === text) return JSON.parse(text);
  return JSON.parse(quoted, (_key, value: unknown) =>
    typeof value === "string" && value.startsWith(marker) ? (tokens[value.slice(marker.length)] ?? value) : value,
  );
}

/** JSON.stringify, but a non-finite number is written as Python writes it (`NaN`, `Infinity`, `-Infinity`), not `null`. */
export function stringifyPythonJson(value: unknown): string {
  let marked = false;
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item !== "number" || Number.isFinite(item)) return item;
    marked = true;
    return `${marker}${Number.isNaN(item) ? "NaN" : item > 0 ? "Infinity" : "-Infinity"}`;
  });
  if (!marked) return text;
  return text.replace(/"\\u0000a3r-non-finite:(NaN|Infinity|-Infinity)"/g, "$1");
}

/** The text with each bare NaN/Infinity/-Infinity token (outside strings) turned into a marked string. */
function quoteNonFinite(text: string): string {
  if (!/NaN|Infinity/.test(text)) return text;
  let out = "";
  let index = 0;
  let inString = false;
  while (index < text.length) {
    const char = text[index]!;
    if (inString) {
      out += char;
      if (char === "\\") {
        out += text[index + 1] ?? "";
        index += 2;
        continue;
      }
      if (char === '"') inString = false;
      index += 1;
      continue;
    }
    if (char === '"') {
      inString = true;
      out += char;
      index += 1;
      continue;
    }
    const token = ["-Infinity", "Infinity", "NaN"].find((name) => text.startsWith(name, index));
    if (token) {
      out += JSON.stringify(`${marker}${token}`);
      index += token.length;
      continue;
    }
    out += char;
    index += 1;
  }
  return out;
}
