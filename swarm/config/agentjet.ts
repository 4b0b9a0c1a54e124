import { join } from "node:path";
import { agentJetKeyRules, ruleOf, valueAt, type MappingContext } from "./agentjet-keys.ts";
import { swarmConfigSchema, type SwarmConfig } from "./config-schema.ts";

/**
 * AgentJet's own configuration (a YAML with a top-level `ajet:` tree, as its jobs and its
 * swarm client's `sync_train_config` carry it) turned into a3r's: one translation for
 * `a3r swarm check`, `a3r swarm serve --config` and `POST /sync_train_config`. Every key
 * is mapped, refused with the reason, or ignored with why (agentjet-keys.ts); a key absent
 * from the YAML that AgentJet gives a default to (its merge policy, length limits, sample
 * cap, epochs) takes that default, so a job runs on a3r as AgentJet would run it.
 *
 * What stays the server's own: the engine (`model`), host, port, admin token, and where
 * experiments live. `experiment_dir: auto` means `{experiment root}/{experiment_name}`; the
 * root is the server's `experiment_dir`, so a job chooses a folder name under it, never a
 * path elsewhere. An optional top-level `a3r:` mapping in the same file holds a3r's own
 * keys (swarm.yaml's form: the engine and the rest) that AgentJet's schema has no place for.
 */

export interface AgentJetMapping {
  config: SwarmConfig;
  /** "a3r key ← ajet path (value)" for every key that took effect, AgentJet's defaults marked. */
  mapped: string[];
  /** "ajet.path: why" for keys that take no effect here; bounded. */
  ignored: string[];
  /** How many ignored entries were left out of `ignored` (it is bounded). */
  ignoredNotListed: number;
}

/** True when the YAML mapping is AgentJet's form (a top-level `ajet:` tree). */
export function isAgentJetConfig(raw: unknown): raw is { ajet: unknown } {
  return typeof raw === "object" && raw !== null && !Array.isArray(raw) && "ajet" in raw;
}

export class AgentJetConfigError extends Error {
  constructor(
    /** The key as written (`ajet.data.train_batch_size`), to find its line. */
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = "AgentJetConfigError";
  }
}

const experimentKeys = new Set(["experiment_dir", "experiment_name"]);
const maxListed = 200;

/**
 * Applies the `ajet:` tree onto `base`. Throws AgentJetConfigError naming the first refused
 * key (with every other refused one), or the AgentJet key whose value a3r's schema refuses.
 */
export function applyAgentJetConfig(
  raw: { ajet: unknown },
  base: SwarmConfig,
  experimentRoot: string,
  options: {
    /** The YAML's `a3r:` section was the base (so it is not "ignored"). */
    a3rSectionApplied?: boolean;
    /** The file's name without extension: AgentJet's experiment name when it gives none (`read_yaml_name`). */
    yamlName?: string;
  } = {},
): AgentJetMapping {
  const tree = raw.ajet;
  if (typeof tree !== "object" || tree === null || Array.isArray(tree)) throw new AgentJetConfigError("ajet", "must be a mapping (AgentJet's config tree)");
  const context: MappingContext = { candidate: structuredClone(base) as unknown as Record<string, unknown>, base, tree: tree as Record<string, unknown> };
  const mapped: string[] = [];
  const ignored: string[] = [];
  let ignoredNotListed = 0;
  const note = (line: string): void => {
    if (ignored.length < maxListed) ignored.push(line);
    else ignoredNotListed += 1;
  };
  const refusals: string[] = [];
  const given = new Set(leafPaths(tree, ""));
  for (const rule of agentJetKeyRules) {
    if (rule.bucket !== "mapped") continue;
    const written = valueAt(tree, rule.path);
    const fromDefault = written === undefined || written === null;
    if (fromDefault && rule.agentjetDefault === undefined) continue;
    const value = fromDefault ? rule.agentjetDefault : written;
    const skipped = rule.apply(value, context);
    if (skipped !== undefined) note(`ajet.${rule.path}: ${skipped}`);
    else if (!experimentKeys.has(rule.path) && rule.path !== "task_reader.type") {
      const [key, ...how] = rule.to.split(" ");
      mapped.push(
        `${key} ← ajet.${rule.path} = ${JSON.stringify(value)}${fromDefault ? " (AgentJet's default)" : ""}${how.length > 0 ? ` ${how.join(" ")}` : ""}`,
      );
    }
  }
  for (const path of given) {
    const rule = ruleOf(path);
    const value = valueAt(tree, path);
    if (rule === undefined) note(`ajet.${path}: not a key of AgentJet's schema that a3r knows; no effect`);
    else if (rule.bucket === "ignored") note(`ajet.${path}: ${rule.why}`);
    else if (rule.bucket === "refused") {
      if (rule.accepts(value)) mapped.push(`ajet.${path} = ${JSON.stringify(value)} (what a3r does)`);
      else refusals.push(`ajet.${path} = ${JSON.stringify(value)}: ${rule.reason}`);
    }
  }
  if (refusals.length > 0) {
    const first = refusals[0]!.split(" = ")[0]!;
    throw new AgentJetConfigError(first, `a3r cannot train as this asks, so the job is refused rather than run differently: ${refusals.join("; ")}`);
  }
  const folder = experimentFolder(tree as Record<string, unknown>, options.yamlName);
  context.candidate.experiment_dir = folder === undefined ? experimentRoot : join(experimentRoot, folder);
  mapped.push(`experiment_dir ← ajet.experiment_name / experiment_dir (${folder ?? "the root itself"}, under ${experimentRoot})`);
  for (const key of Object.keys(raw)) {
    if (key === "ajet" || (key === "a3r" && options.a3rSectionApplied)) continue;
    if (key === "a3r") note("a3r: read where the file is loaded (swarm serve --config, swarm check); a running server keeps its own a3r keys");
    else note(`${key}: outside ajet:, AgentJet's launcher or another tool reads it; no effect`);
  }
  const config = checked(context.candidate, tree);
  checkLengths(config);
  return { config: { ...config, port: base.port, host: base.host, admin_token: base.admin_token }, mapped, ignored, ignoredNotListed };
}

function checked(candidate: Record<string, unknown>, tree: unknown): SwarmConfig {
  const parsed = swarmConfigSchema.safeParse(candidate);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const target = issue.path.map(String).join(".");
  const rule = agentJetKeyRules.find((candidateRule) => candidateRule.bucket === "mapped" && candidateRule.to.split(" ")[0] === target.replace(/\.\d+$/, ""));
  const written = rule && valueAt(tree, rule.path) !== undefined;
  const where = rule ? `ajet.${rule.path}${written ? "" : " (AgentJet's default)"} (a3r's ${target})` : target || "ajet";
  throw new AgentJetConfigError(where, issue.message);
}

/** AgentJet asserts this of every job (its tracker refuses to start otherwise). */
function checkLengths(config: SwarmConfig): void {
  const { max_prompt_tokens: prompt, max_response_tokens: response, max_model_len: model } = config.limits;
  if (prompt !== undefined && response !== undefined && model !== undefined && prompt + response > model) {
    throw new AgentJetConfigError(
      "ajet.rollout.max_model_len",
      `data.max_prompt_length + data.max_response_length (${prompt} + ${response}) exceed max_model_len (${model}); AgentJet refuses this too: raise max_model_len or lower the two`,
    );
  }
}

/** The experiment's folder under the root: experiment_name (the YAML's name by default, as AgentJet), else the last part of an explicit experiment_dir. */
function experimentFolder(tree: Record<string, unknown>, yamlName: string | undefined): string | undefined {
  const named = typeof tree.experiment_name === "string" && tree.experiment_name !== "read_yaml_name" ? tree.experiment_name : undefined;
  const name = named ?? (tree.experiment_name === undefined || tree.experiment_name === "read_yaml_name" ? yamlName : undefined);
  const dir = typeof tree.experiment_dir === "string" && tree.experiment_dir !== "auto" ? tree.experiment_dir.split(/[\\/]/).filter(Boolean).pop() : undefined;
  const chosen = name ?? dir;
  if (chosen === undefined) return undefined;
  // A folder name, never a path: no separators, no dot-dot, printable and short.
  const safe = chosen.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100);
  return safe === "" || /^\.+$/.test(safe) ? undefined : safe;
}

/** Every leaf path of the tree; a list is a leaf (depth-bounded so a hostile document cannot recurse far). */
function* leafPaths(node: unknown, prefix: string, depth = 0): Generator<string> {
  if (typeof node !== "object" || node === null || Array.isArray(node) || depth > 12) {
    if (prefix) yield prefix;
    return;
  }
  const entries = Object.entries(node as Record<string, unknown>);
  if (entries.length === 0 && prefix) yield prefix;
  for (const [key, value] of entries) yield* leafPaths(value, prefix ? `${prefix}.${key}` : key, depth + 1);
}
