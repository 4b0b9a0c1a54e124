import { join } from "node:path";
import { swarmConfigSchema, type SwarmConfig } from "../config/config-schema.ts";
import { engineKind, engineKindNames } from "../engines/engine-registry.ts";

/**
 * AgentJet's own training configuration (the `ajet:` tree its client sends through
 * `sync_train_config`) applied to a3r's server: the keys a3r has a meaning for replace the
 * server's current values, every other leaf is listed as ignored (answered and logged), so
 * an AgentJet client runs unchanged and its user can see what took no effect.
 *
 * What stays the server's own: the engine (`model`), host, port, admin token, limits other
 * than the episode cache, and where experiments live. AgentJet's `experiment_dir: auto`
 * means `{experiment root}/{experiment_name}`; here the root is always the server's own
 * `experiment_dir`, so a client chooses a folder name under it, never a path elsewhere.
 */

export interface AgentJetMapping {
  config: SwarmConfig;
  /** "a3r key ← ajet path" for every key that took effect. */
  mapped: string[];
  /** ajet paths (leaves) that a3r has no use for, each at most once; bounded. */
  ignored: string[];
  /** How many ignored leaves were left out of `ignored` (it is bounded). */
  ignoredNotListed: number;
}

/** True when the YAML mapping is AgentJet's form (a top-level `ajet:` tree). */
export function isAgentJetConfig(raw: unknown): raw is { ajet: unknown } {
  return typeof raw === "object" && raw !== null && !Array.isArray(raw) && "ajet" in raw;
}

export class AgentJetConfigError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = "AgentJetConfigError";
  }
}

interface Rule {
  from: string;
  to: string;
  /** Applies only when this holds for the server's current config (else the key is ignored, with the reason). */
  when?: (config: SwarmConfig) => string | undefined;
}

// lr and response lengths are in a real language model's scale (AgentJet defaults to 1e-6
// and thousands of tokens); the embedded CPU policy would learn nothing or run for ages.
const onlyForLanguageModels = (config: SwarmConfig): string | undefined => {
  if (engineKind(config.model.kind)?.languageModel === true) return undefined;
  const languageModels = engineKindNames().filter((name) => engineKind(name)?.languageModel === true);
  return `only with model.kind ${languageModels.join(" or ")} (this server runs ${config.model.kind}); set it in swarm.yaml`;
};

const rules: Rule[] = [
  { from: "data.train_batch_size", to: "train_batch_size" },
  { from: "rollout.num_repeat", to: "num_repeat" },
  { from: "rollout.max_env_worker", to: "max_env_worker" },
  { from: "swarm_mode_sample_collection_method", to: "swarm_mode_sample_collection_method" },
  { from: "swarm_mode_sample_collection_max_cached_episodes", to: "limits.max_cached_episodes" },
  { from: "rollout.temperature", to: "sampling.temperature" },
  { from: "rollout.max_response_length_in_one_turn", to: "sampling.max_tokens", when: onlyForLanguageModels },
  { from: "trainer_common.optim.lr", to: "optimizer.lr", when: onlyForLanguageModels },
  { from: "trainer_common.save_freq", to: "save_freq" },
  { from: "trainer_common.total_training_steps", to: "max_steps" },
];
/** Read to place the experiment, so never "ignored". */
const experimentKeys = new Set(["experiment_dir", "experiment_name"]);
const maxIgnoredListed = 200;

export function applyAgentJetConfig(raw: { ajet: unknown }, current: SwarmConfig, experimentRoot: string): AgentJetMapping {
  const tree = raw.ajet;
  if (typeof tree !== "object" || tree === null || Array.isArray(tree)) throw new AgentJetConfigError("ajet", "must be a mapping (AgentJet's config tree)");
  const candidate = structuredClone(current) as unknown as Record<string, unknown>;
  const mapped: string[] = [];
  const used = new Set<string>();
  const skippedWithReason: string[] = [];
  for (const rule of rules) {
    const value = valueAt(tree, rule.from);
    if (value === undefined || value === null) continue;
    used.add(rule.from);
    const reason = rule.when?.(current);
    if (reason !== undefined) {
      skippedWithReason.push(`ajet.${rule.from} (${reason})`);
      continue;
    }
    setAt(candidate, rule.to, value);
    mapped.push(`${rule.to} ← ajet.${rule.from}`);
  }
  const folder = experimentFolder(tree as Record<string, unknown>);
  candidate.experiment_dir = folder === undefined ? experimentRoot : join(experimentRoot, folder);
  if (folder !== undefined) mapped.push(`experiment_dir ← ajet.experiment_name (${folder}, under the server's ${experimentRoot})`);
  const parsed = swarmConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const to = issue.path.map(String).join(".");
    const from = rules.find((rule) => rule.to === to)?.from;
    throw new AgentJetConfigError(from ? `ajet.${from} (a3r's ${to})` : to || "ajet", issue.message);
  }
  const ignored: string[] = [...skippedWithReason];
  let ignoredNotListed = 0;
  const note = (path: string): void => {
    if (ignored.length < maxIgnoredListed) ignored.push(path);
    else ignoredNotListed += 1;
  };
  for (const path of leafPaths(tree, "")) if (!used.has(path) && !experimentKeys.has(path)) note(`ajet.${path}`);
  for (const key of Object.keys(raw)) if (key !== "ajet") note(key);
  return { config: { ...parsed.data, port: current.port, host: current.host, admin_token: current.admin_token }, mapped, ignored, ignoredNotListed };
}

/** The experiment's folder under the root: experiment_name, else the last part of an explicit experiment_dir. */
function experimentFolder(tree: Record<string, unknown>): string | undefined {
  const name = typeof tree.experiment_name === "string" && tree.experiment_name !== "read_yaml_name" ? tree.experiment_name : undefined;
  const dir = typeof tree.experiment_dir === "string" && tree.experiment_dir !== "auto" ? tree.experiment_dir.split(/[\\/]/).filter(Boolean).pop() : undefined;
  const chosen = name ?? dir;
  if (chosen === undefined) return undefined;
  // A folder name, never a path: no separators, no dot-dot, printable and short.
  const safe = chosen.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100);
  return safe === "" || /^\.+$/.test(safe) ? undefined : safe;
}

function valueAt(tree: unknown, dotted: string): unknown {
  let node = tree;
  for (const key of dotted.split(".")) {
    if (typeof node !== "object" || node === null || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function setAt(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node = (typeof next === "object" && next !== null ? next : (node[key] = {})) as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

/** Every leaf path of the tree (depth-bounded so a hostile document cannot recurse far). */
function* leafPaths(node: unknown, prefix: string, depth = 0): Generator<string> {
  if (typeof node !== "object" || node === null || Array.isArray(node) || depth > 12) {
    if (prefix) yield prefix;
    return;
  }
  const entries = Object.entries(node as Record<string, unknown>);
  if (entries.length === 0 && prefix) yield prefix;
  for (const [key, value] of entries) yield* leafPaths(value, prefix ? `${prefix}.${key}` : key, depth + 1);
}
