import matter from "gray-matter";
import { LineCounter, isMap, isScalar, isSeq, parseDocument } from "yaml";
import type { Document, Node } from "yaml";
import { problem } from "./finding.ts";
import type { Problem } from "./finding.ts";
import { lineOfOffset } from "./finding.ts";

export interface FrontMatter {
  /** Whether the text opens with a front-matter block at all. */
  present: boolean;
  /** The parsed mapping; empty when absent or unreadable. */
  data: Record<string, unknown>;
  /** The markdown after the closing `---`. */
  body: string;
  /** 1-based line of the body's first line in the whole file. */
  bodyStartLine: number;
  /** Front-matter fields by dotted path (`metric.goal`) to their 1-based line. */
  fieldLines: Record<string, number>;
  problems: Problem[];
}

const yamlLanguages = new Set(["", "yaml", "yml"]);

/** Machine fields fit in a few lines; a front matter this large is a mistake or an attack. */
export const maxFrontMatterChars = 64 * 1024;

function refuseEngine(language: string): () => never {
  return () => {
    throw new Error(`front matter in ${language} is never evaluated`);
  };
}

/**
 * Splits the front matter from the body with gray-matter, safely: JavaScript (or any
 * non-YAML) front matter is refused before gray-matter sees it, and its executable engines
 * are replaced by ones that throw, in case the first guard is ever bypassed. An options
 * object is always passed because without one gray-matter caches results by text and hands
 * the same objects to every caller. YAML is read by the `yaml` package as YAML 1.2 core,
 * so dates stay strings and `0123` is never octal.
 */
export function readFrontMatter(text: string): FrontMatter {
  const absent: FrontMatter = { present: false, data: {}, body: text, bodyStartLine: 1, fieldLines: {}, problems: [] };
  if (!text.startsWith("---") || text.charAt(3) === "-") return absent;

  const firstNewline = text.indexOf("\n");
  const firstLine = firstNewline === -1 ? text : text.slice(0, firstNewline);
  const language = firstLine.slice(3).trim().toLowerCase();
  const closing = firstNewline === -1 ? -1 : text.indexOf("\n---", firstNewline);
  const afterClosing = closing === -1 ? firstNewline + 1 : skipLine(text, closing + 1);
  const fallbackBody = firstNewline === -1 ? "" : text.slice(afterClosing);
  const fallback = { ...absent, present: true, body: fallbackBody, bodyStartLine: lineOfOffset(text, afterClosing) };

  const refusal = blockRefusal(text, firstLine, language, firstNewline, closing);
  if (refusal !== undefined) return { ...fallback, problems: [refusal] };
  const read = readYamlBlock(text);
  if ("refused" in read) return { ...fallback, problems: [read.refused] };
  return frontMatterOf(text, read);
}

/** Why a front-matter block is not read at all (not YAML, never closed, too large), if it is not. */
function blockRefusal(text: string, firstLine: string, language: string, firstNewline: number, closing: number): Problem | undefined {
  if (!yamlLanguages.has(language)) {
    return problem(
      "FRONT_MATTER_NOT_YAML",
      1,
      `front matter declared as "${firstLine.slice(3).trim()}" is refused and was not evaluated`,
      "write the front matter in YAML: start the file with a line holding only ---",
    );
  }
  if (closing === -1) {
    return problem("FRONT_MATTER_UNCLOSED", 1, "the front matter opened on line 1 is never closed", "end the front matter with a line holding only ---");
  }
  const block = text.slice(firstNewline, closing);
  if (block.length > maxFrontMatterChars) {
    return problem(
      "FRONT_MATTER_TOO_LARGE",
      1,
      `the front matter is ${block.length} characters, over the ${maxFrontMatterChars} limit`,
      "keep the front matter to the machine fields; put long text in the sections",
    );
  }
  return undefined;
}

/** gray-matter's split of a text, with the YAML document its engine parsed (or why parsing threw). */
interface YamlRead {
  parsed: { content: string; data: unknown };
  document: Document.Parsed | undefined;
  failure: unknown;
  lineCounter: LineCounter;
}

/** Splits the text with gray-matter, its YAML parsed by the `yaml` package; a refusal if a refusing engine threw. */
function readYamlBlock(text: string): YamlRead | { refused: Problem } {
  const lineCounter = new LineCounter();
  let document: Document.Parsed | undefined;
  let failure: unknown;
  const parseYaml = (source: string): object => {
    try {
      // resolveKnownTags off: an explicit !!timestamp, !!binary or !!set stays plain text
      // (with a warning) instead of becoming a Date, Buffer or Set.
      document = parseDocument(source, { version: "1.2", schema: "core", resolveKnownTags: false, lineCounter, prettyErrors: true, uniqueKeys: true });
      return document.errors.length > 0 ? {} : (document.toJS({ maxAliasCount: 100 }) as object);
    } catch (error) {
      // The alias-count guard and stack overflows on absurd nesting throw instead of
      // reporting: they are still just invalid YAML to the person who wrote it.
      failure = error;
      return {};
    }
  };
  let parsed: { content: string; data: unknown };
  try {
    parsed = matterWithSafeEngines(text, parseYaml);
  } catch (error) {
    // Only reachable if the language check (blockRefusal) is ever bypassed: a refusing engine threw.
    return {
      refused: problem(
        "FRONT_MATTER_NOT_YAML",
        1,
        `front matter refused: ${error instanceof Error ? error.message : String(error)}`,
        "write the front matter in YAML",
      ),
    };
  }
  return { parsed, document, failure, lineCounter };
}

/** The front matter of a parsed block: its data and field lines, or the YAML's problems. */
function frontMatterOf(text: string, { parsed, document, failure, lineCounter }: YamlRead): FrontMatter {
  const body = parsed.content;
  const bodyStartLine = lineOfOffset(text, text.length - body.length);
  const result: FrontMatter = { present: true, data: {}, body, bodyStartLine, fieldLines: {}, problems: [] };
  const yamlHint = "fix the YAML syntax on that line (quote values holding ': ' or '#', indent nested keys)";
  if (failure !== undefined) {
    const message = failure instanceof Error ? failure.message : String(failure);
    result.problems = [
      problem("YAML_INVALID", 1, `front matter cannot be read: ${firstMessageLine(message)}`, "write plain fields: no deep nesting, no alias expansion tricks"),
    ];
    return result;
  }
  if (document === undefined) return result;

  if (document.errors.length > 0) {
    // The first few are enough to fix; the rest usually follow from them.
    result.problems = document.errors
      .slice(0, 5)
      .map((error) => problem("YAML_INVALID", error.linePos?.[0]?.line ?? 1, `front matter is not valid YAML: ${firstMessageLine(error.message)}`, yamlHint));
    return result;
  }
  result.problems = document.warnings
    .slice(0, 5)
    .map((warning) =>
      problem(
        "YAML_WARNING",
        warning.linePos?.[0]?.line ?? 1,
        `front matter: ${firstMessageLine(warning.message)}`,
        "drop the !tag: blueprint fields are plain text, numbers, lists and mappings",
        "warning",
      ),
    );
  const contents = document.contents;
  const data = parsed.data as unknown;
  if (contents !== null && !isMap(contents)) {
    result.problems.push(
      problem("FRONT_MATTER_INVALID", 2, "front matter must be a mapping of fields (key: value)", "write one `field: value` per line between the --- lines"),
    );
    return result;
  }
  result.data = data !== null && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  if (contents) collectFieldLines(contents, "", lineCounter, result.fieldLines);
  return result;
}

export function matterWithSafeEngines(text: string, parseYaml: (source: string) => object): { content: string; data: unknown } {
  // A fresh options object on every call: gray-matter caches by text only without one.
  return matter(text, {
    language: "yaml",
    engines: {
      yaml: parseYaml,
      yml: parseYaml,
      js: refuseEngine("JavaScript"),
      javascript: refuseEngine("JavaScript"),
      coffee: refuseEngine("CoffeeScript"),
      coffeescript: refuseEngine("CoffeeScript"),
      cson: refuseEngine("CSON"),
    },
  });
}

function skipLine(text: string, start: number): number {
  const end = text.indexOf("\n", start);
  return end === -1 ? text.length : end + 1;
}

function firstMessageLine(message: string): string {
  const first = message.split("\n")[0]?.trim() ?? message;
  // The finding carries the line itself; the position suffix would only repeat it.
  return first.replace(/ at line \d+, column \d+:?$/, "");
}

function collectFieldLines(node: Node, prefix: string, counter: LineCounter, lines: Record<string, number>): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = pair.key;
      if (!isScalar(key) || key.range === undefined || key.range === null) continue;
      const path = prefix === "" ? String(key.value) : `${prefix}.${String(key.value)}`;
      lines[path] = counter.linePos(key.range[0]).line;
      if (pair.value && typeof pair.value === "object") collectFieldLines(pair.value as Node, path, counter, lines);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      if (!item || typeof item !== "object") return;
      const path = `${prefix}.${index}`;
      const range = (item as Node).range;
      if (range) lines[path] = counter.linePos(range[0]).line;
      collectFieldLines(item as Node, path, counter, lines);
    });
  }
}
