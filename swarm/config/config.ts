import { readFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, resolve } from "node:path";
import type { z } from "zod";
import { LineCounter, parseDocument } from "yaml";
import { SwarmConfigError } from "./config-error.ts";
import { canonicalKeys, deprecationMessage, droppedMessage, objectsOf, snakeCase } from "./config-keys.ts";
import { AgentJetConfigError, applyAgentJetConfig, isAgentJetConfig, type AgentJetMapping } from "./agentjet.ts";
import { swarmConfigObject, type SwarmConfig } from "./config-schema.ts";

export { SwarmConfigError } from "./config-error.ts";
export { swarmConfigSchema, sampleCollectionMethods } from "./config-schema.ts";
export type { SwarmConfig, SwarmConfigInput, SampleCollectionMethod } from "./config-schema.ts";

export interface ParseSwarmConfigOptions {
  /** Names the source in messages (default swarm.yaml). */
  file?: string;
  /** Resolves a relative `experiment_dir` (default: the working directory). */
  baseDirectory?: string;
  /**
   * Told one line per key written in its old camelCase spelling ("file:line: deprecated key
   * ..."); default: the line goes to stderr as a warning.
   */
  onDeprecation?: (line: string) => void;
  /**
   * Told what an AgentJet-form file (top-level `ajet:`) became: the keys mapped and those
   * ignored, with why (agentjet.ts). Default: nothing is said.
   */
  onAgentJet?: (mapping: AgentJetMapping) => void;
}

const printDeprecation = (line: string): void => {
  process.stderr.write(`warning: ${line}\n`);
};

/**
 * Parses swarm.yaml text. `file` names the source in messages; `baseDirectory` resolves a
 * relative `experiment_dir` (the config file's folder, so a run does not depend on the
 * directory it was started from). Throws SwarmConfigError naming file, line and field.
 * A key in its old camelCase spelling works, and is reported (`onDeprecation`).
 */
export function parseSwarmConfig(text: string, options: ParseSwarmConfigOptions = {}): SwarmConfig {
  const file = options.file ?? "swarm.yaml";
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const yamlError = document.errors[0];
  if (yamlError) {
    const line = yamlError.linePos?.[0]?.line;
    throw new SwarmConfigError(`YAML syntax error: ${yamlError.message.split("\n")[0]}`, {
      file,
      ...(line === undefined ? {} : { line }),
      hint: "fix the YAML syntax at that line (indentation, quotes, a missing colon)",
    });
  }
  const raw: unknown = document.toJS() ?? {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SwarmConfigError("the configuration must be a YAML mapping of keys to values", { file, line: 1 });
  }
  const lineOf = (keyPath: string[]): number | undefined => {
    const offset = findKeyOffset(document.contents, keyPath);
    return offset === undefined ? undefined : lineCounter.linePos(offset).line;
  };
  if (isAgentJetConfig(raw)) return parseAgentJetForm(raw, { file, options, lineOf });
  return parseA3rForm(raw, [], { file, options, lineOf });
}

interface FormContext {
  file: string;
  options: ParseSwarmConfigOptions;
  lineOf: (keyPath: string[]) => number | undefined;
}

/** swarm.yaml's own form (or the `a3r:` section of an AgentJet file, `prefix` ["a3r"]). */
function parseA3rForm(raw: unknown, prefix: string[], { file, options, lineOf }: FormContext): SwarmConfig {
  const canonical = canonicalKeys(raw, swarmConfigObject);
  const result = swarmConfigObject.safeParse(canonical.value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw describeIssue(issue, issue.path.map(String), file, (keyPath) => lineOf([...prefix, ...keyPath]), prefix);
  }
  const report = options.onDeprecation ?? printDeprecation;
  const where = (key: { writtenPath: string[] }): string => {
    const line = lineOf([...prefix, ...key.writtenPath]);
    return line === undefined ? file : `${file}:${line}`;
  };
  for (const renamed of canonical.renamed) report(`${where(renamed)}: ${deprecationMessage(renamed)}`);
  for (const dropped of canonical.conflicts) report(`${where(dropped)}: ${droppedMessage(dropped)}`);
  const config = result.data;
  const baseDirectory = options.baseDirectory ?? process.cwd();
  return {
    ...config,
    experiment_dir: isAbsolute(config.experiment_dir) ? config.experiment_dir : resolve(baseDirectory, config.experiment_dir),
  };
}

/** AgentJet's form: its `ajet:` tree onto the `a3r:` section (or a3r's defaults), as the server's sync_train_config applies it. */
function parseAgentJetForm(raw: { ajet: unknown; a3r?: unknown }, context: FormContext): SwarmConfig {
  const base = parseA3rForm(raw.a3r ?? {}, ["a3r"], context);
  let mapping: AgentJetMapping;
  try {
    const yamlName = context.file.includes(".") ? basename(context.file).replace(/\.[^.]*$/, "") : undefined;
    mapping = applyAgentJetConfig(raw, base, base.experiment_dir, { a3rSectionApplied: true, ...(yamlName ? { yamlName } : {}) });
  } catch (error) {
    if (!(error instanceof AgentJetConfigError)) throw error;
    const line = context.lineOf(error.path.split(" ")[0]!.split("."));
    throw new SwarmConfigError(`AgentJet key ${error.message}`, {
      file: context.file,
      ...(line === undefined ? {} : { line }),
      field: error.path,
      hint: "change or remove that key; swarm/README.md (AgentJet's YAML) lists what a3r maps, refuses and ignores",
    });
  }
  context.options.onAgentJet?.(mapping);
  return mapping.config;
}

/** Reads and parses a swarm.yaml file. */
export async function loadSwarmConfig(path: string, options: Pick<ParseSwarmConfigOptions, "onDeprecation" | "onAgentJet"> = {}): Promise<SwarmConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new SwarmConfigError(code === "ENOENT" ? "config file not found" : `cannot read config file (${code ?? String(error)})`, {
      file: path,
      hint: "pass the path of an existing swarm.yaml with --config (see examples/tasks/*/swarm.yaml)",
    });
  }
  return parseSwarmConfig(text, { ...options, file: path, baseDirectory: dirname(resolve(path)) });
}

function describeIssue(
  issue: z.core.$ZodIssue,
  path: string[],
  file: string,
  lineOf: (keyPath: string[]) => number | undefined,
  prefix: string[] = [],
): SwarmConfigError {
  const dotted = [...prefix, ...path].join(".");
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0]!;
    const full = [...prefix, ...path, key].join(".");
    const known = knownKeysAt(swarmConfigObject, path);
    const suggestion = closest(key, known);
    const line = lineOf([...path, key]);
    return new SwarmConfigError(`unknown key "${full}"${suggestion ? ` — did you mean "${suggestion}"?` : ""}`, {
      file,
      ...(line === undefined ? {} : { line }),
      field: full,
      hint: known.length > 0 ? `allowed keys here: ${known.join(", ")}` : "remove the key",
    });
  }
  const line = lineOf(path);
  const field = dotted || "(top level)";
  return new SwarmConfigError(`invalid value for "${field}": ${issue.message}`, {
    file,
    ...(line === undefined ? {} : { line }),
    field,
    hint: hintFor(issue),
  });
}

function hintFor(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_value") return `use one of: ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`;
  if (issue.code === "invalid_union" && "options" in issue && Array.isArray(issue.options)) {
    return `use one of: ${(issue.options as unknown[]).map((value) => JSON.stringify(value)).join(", ")}`;
  }
  if (issue.code === "invalid_type") return `give a ${issue.expected}`;
  return "see examples/tasks/*/swarm.yaml for a valid configuration";
}

/** The keys an object schema accepts at `path` (for "did you mean"). */
function knownKeysAt(schema: z.ZodType, path: string[]): string[] {
  let candidates: z.ZodType[] = [schema];
  for (const key of [...path, undefined]) {
    const objects = candidates.flatMap(objectsOf);
    if (key === undefined) return [...new Set(objects.flatMap((object) => Object.keys(object.shape)))];
    candidates = objects.map((object) => object.shape[key] as z.ZodType | undefined).filter((next): next is z.ZodType => next !== undefined);
  }
  return [];
}

/** Offset of the key scalar of `path` in the document (so the line points at the key). */
function findKeyOffset(contents: unknown, path: string[]): number | undefined {
  let node = contents as { items?: Array<{ key?: { value?: unknown; range?: [number, number, number] }; value?: unknown }> } | null;
  let offset: number | undefined;
  for (const key of path) {
    // A key given in its old spelling (config-keys.ts) is found by its new one.
    const pair = node?.items?.find((item) => String(item.key?.value) === key) ?? node?.items?.find((item) => snakeCase(String(item.key?.value)) === key);
    if (!pair) return offset;
    offset = pair.key?.range?.[0];
    node = pair.value as typeof node;
  }
  return offset;
}

function closest(word: string, candidates: string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(word.length / 3)) ? best.candidate : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
