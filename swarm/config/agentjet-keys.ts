import { engineKind, engineKindNames } from "../engines/engine-registry.ts";
import { madnessChecks } from "../tracking/madness.ts";
import type { SwarmConfig } from "./config-schema.ts";

/**
 * Every key of AgentJet's configuration schema (its `ajet:` tree: the default YAML, the
 * swarm default and the schema dataclasses), each in exactly one bucket:
 *
 * - **mapped**: a3r does what AgentJet does with it (`apply` sets a3r's key);
 * - **refused**: a3r cannot do what the value asks, so a job that sets it is refused with
 *   the reason rather than trained differently; the value a3r already follows passes;
 * - **ignored**: it takes no effect on a3r's server, and `why` says why (client-side,
 *   another backbone's, a3r's own swarm.yaml key).
 *
 * A path ending in `.*` covers the whole subtree. agentjet.ts walks a YAML against this
 * table; agentjet-keys.test.ts checks that every key of AgentJet's schema lands in one
 * bucket. A key in none (newer than this table, or misspelt) is reported as unknown.
 */

export interface MappingContext {
  /** The configuration being built (a copy of the base). */
  candidate: Record<string, unknown>;
  base: SwarmConfig;
  /** The `ajet:` tree as given. */
  tree: Record<string, unknown>;
}

interface Mapped {
  path: string;
  bucket: "mapped";
  /** What it becomes in a3r (said in the answer). */
  to: string;
  /** AgentJet's value when the key is absent (its default YAML; its swarm default where they differ), applied too; none: absent means unchanged. */
  agentjetDefault?: unknown;
  /** Sets a3r's key; returns a reason when the key takes no effect on this server after all. */
  apply: (value: unknown, context: MappingContext) => string | undefined;
}
interface Refused {
  path: string;
  bucket: "refused";
  /** The values a3r already follows (they pass). */
  accepts: (value: unknown) => boolean;
  reason: string;
}
interface Ignored {
  path: string;
  bucket: "ignored";
  why: string;
}
export type KeyRule = Mapped | Refused | Ignored;

export function setAt(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split(".");
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node = (typeof next === "object" && next !== null ? next : (node[key] = {})) as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

export function valueAt(tree: unknown, dotted: string): unknown {
  let node = tree;
  for (const key of dotted.split(".")) {
    if (typeof node !== "object" || node === null || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

// lr and KL are in a real language model's scale (AgentJet's lr is 1e-6): the embedded CPU
// policy would learn nothing with them.
function languageModelOnly(base: SwarmConfig): string | undefined {
  if (engineKind(base.model.kind)?.languageModel === true) return undefined;
  const names = engineKindNames().filter((name) => engineKind(name)?.languageModel === true);
  return `only with model.kind ${names.join(" or ")} (this server runs ${base.model.kind}); set it in swarm.yaml`;
}

const to =
  (key: string, check?: (base: SwarmConfig) => string | undefined) =>
  (value: unknown, context: MappingContext): string | undefined => {
    const reason = check?.(context.base);
    if (reason !== undefined) return reason;
    setAt(context.candidate, key, value);
    return undefined;
  };

/** AgentJet's dummy task reader (its swarm default) has 1000 tasks: an epoch is that many tasks. */
export const dummyTasksPerEpoch = 1000;

function epochs(value: unknown, context: MappingContext): string | undefined {
  const steps = valueAt(context.tree, "trainer_common.total_training_steps");
  if (steps !== undefined && steps !== null) return "trainer_common.total_training_steps is set and wins, as in AgentJet";
  const reader = valueAt(context.tree, "task_reader.type") ?? "random_dummy";
  if (reader !== "random_dummy" && reader !== "dummy")
    return `the tasks come from the client (task_reader.type ${String(reader)}), so a3r cannot count an epoch; set trainer_common.total_training_steps`;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) return undefined; // the schema names the bad value
  const batch = Number(context.candidate.train_batch_size) || 1;
  // verl's loader drops the last partial batch: an epoch is floor(tasks / batch) steps.
  setAt(context.candidate, "max_steps", value * Math.max(1, Math.floor(dummyTasksPerEpoch / batch)));
  return undefined;
}

function maxResponseInOneTurn(value: unknown, context: MappingContext): string | undefined {
  setAt(context.candidate, "limits.max_tokens_per_call", value);
  // A language model also samples that long by default; the embedded policy keeps its own default (the cap still holds).
  if (languageModelOnly(context.base) === undefined) setAt(context.candidate, "sampling.max_tokens", value);
  return undefined;
}

const compareLevels: Record<string, "text" | "token"> = { text: "text", text_and_image: "text", token: "token" };

const mapped: Mapped[] = [
  { path: "experiment_name", bucket: "mapped", to: "experiment_dir (a folder under the server's experiment root)", apply: () => undefined },
  {
    path: "experiment_dir",
    bucket: "mapped",
    to: 'experiment_dir ("auto": {root}/{experiment_name}; a path: its last part under the root)',
    apply: () => undefined,
  },
  { path: "data.train_batch_size", bucket: "mapped", to: "train_batch_size", apply: to("train_batch_size") },
  {
    path: "data.max_prompt_length",
    bucket: "mapped",
    to: "limits.max_prompt_tokens (truncate, as AgentJet)",
    agentjetDefault: 3000,
    apply: to("limits.max_prompt_tokens"),
  },
  {
    path: "data.max_response_length",
    bucket: "mapped",
    to: "limits.max_response_tokens (truncate, as AgentJet)",
    agentjetDefault: 15000,
    apply: to("limits.max_response_tokens"),
  },
  { path: "rollout.num_repeat", bucket: "mapped", to: "num_repeat", apply: to("num_repeat") },
  { path: "rollout.max_env_worker", bucket: "mapped", to: "max_env_worker", apply: to("max_env_worker") },
  { path: "rollout.temperature", bucket: "mapped", to: "sampling.temperature", apply: to("sampling.temperature") },
  { path: "rollout.top_p", bucket: "mapped", to: "sampling.top_p", apply: to("sampling.top_p") },
  {
    path: "rollout.max_response_length_in_one_turn",
    bucket: "mapped",
    to: "limits.max_tokens_per_call (a request's max_tokens is lowered to it), and sampling.max_tokens for language models",
    agentjetDefault: 4096,
    apply: maxResponseInOneTurn,
  },
  {
    path: "rollout.max_model_len",
    bucket: "mapped",
    to: "limits.max_model_len (a prompt that leaves no room is answered with AgentJet's overflow message, refused for training)",
    agentjetDefault: 18000,
    apply: to("limits.max_model_len"),
  },
  {
    path: "rollout.multi_turn.max_sample_per_task",
    bucket: "mapped",
    to: "limits.max_samples_per_episode (a random subset, as AgentJet)",
    agentjetDefault: 30,
    apply: to("limits.max_samples_per_episode"),
  },
  { path: "rollout.compute_madness_checklist", bucket: "mapped", to: "madness.checklist", agentjetDefault: [], apply: to("madness.checklist") },
  { path: "rollout.agent_madness_reward", bucket: "mapped", to: "madness.reward", agentjetDefault: 0, apply: to("madness.reward") },
  { path: "rollout.agent_madness_termination", bucket: "mapped", to: "madness.terminate", agentjetDefault: true, apply: to("madness.terminate") },
  { path: "rollout.force_disable_toolcalls", bucket: "mapped", to: "disable_tool_calls", agentjetDefault: false, apply: to("disable_tool_calls") },
  { path: "trainer_common.optim.lr", bucket: "mapped", to: "optimizer.lr", apply: to("optimizer.lr", languageModelOnly) },
  { path: "trainer_common.kl_loss_coef", bucket: "mapped", to: "optimizer.kl_coef", apply: to("optimizer.kl_coef", languageModelOnly) },
  {
    path: "trainer_common.use_kl_loss",
    bucket: "mapped",
    to: "optimizer.kl_coef 0 when false",
    apply: (value, context) => (value === false ? to("optimizer.kl_coef")(0, context) : undefined),
  },
  { path: "trainer_common.save_freq", bucket: "mapped", to: "save_freq", apply: to("save_freq") },
  { path: "trainer_common.total_training_steps", bucket: "mapped", to: "max_steps", apply: to("max_steps") },
  {
    path: "trainer_common.total_epochs",
    bucket: "mapped",
    to: `max_steps (epochs × floor(${dummyTasksPerEpoch} / train_batch_size): AgentJet's dummy task reader)`,
    agentjetDefault: 50,
    apply: epochs,
  },
  { path: "task_reader.type", bucket: "mapped", to: "how total_epochs counts (random_dummy: 1000 tasks an epoch)", apply: () => undefined },
  {
    path: "swarm_mode_sample_collection_method",
    bucket: "mapped",
    to: "swarm_mode_sample_collection_method",
    apply: to("swarm_mode_sample_collection_method"),
  },
  {
    path: "swarm_mode_sample_collection_max_cached_episodes",
    bucket: "mapped",
    to: "limits.max_cached_episodes",
    apply: to("limits.max_cached_episodes"),
  },
  {
    path: "context_tracker.timeline_merging_policy.timeline_compare_level",
    bucket: "mapped",
    to: "compare_level (text_and_image is text)",
    agentjetDefault: "text",
    apply: (value, context) => to("compare_level")(typeof value === "string" ? (compareLevels[value] ?? value) : value, context),
  },
  { path: "context_tracker.timeline_merging_policy.ignore_tools", bucket: "mapped", to: "ignore_tools", agentjetDefault: true, apply: to("ignore_tools") },
];

const isNot =
  (...allowed: unknown[]) =>
  (value: unknown): boolean =>
    allowed.includes(value);

const refused: Refused[] = [
  {
    path: "rollout.gamma",
    bucket: "refused",
    accepts: isNot(1, 1.0),
    reason: "a3r rewards every turn with the episode's reward (gamma 1; AgentJet asserts 1 too)",
  },
  { path: "rollout.top_k", bucket: "refused", accepts: isNot(-1, 0, null), reason: "a3r's engines sample with temperature and top_p only" },
  {
    path: "rollout.chat_template_generate_prompt_type",
    bucket: "refused",
    accepts: isNot("default"),
    reason: "a3r masks exactly the generated tokens; it has no <think> header blackout",
  },
  { path: "trainer_common.algorithm.adv_estimator", bucket: "refused", accepts: isNot("grpo"), reason: "a3r's engines train GRPO only" },
  {
    path: "trainer_common.use_kl_in_reward",
    bucket: "refused",
    accepts: isNot(false),
    reason: "a3r puts KL in the loss (optimizer.kl_coef), never in the reward",
  },
  { path: "trainer_common.kl_penalty_type", bucket: "refused", accepts: isNot("kl"), reason: "a3r has no KL-in-reward penalty" },
  { path: "trainer_common.ppo_epochs", bucket: "refused", accepts: isNot(1), reason: "a3r takes one optimizer pass per batch" },
  { path: "trainer_common.mini_batch_num", bucket: "refused", accepts: isNot(1), reason: "a3r takes one optimizer step per batch" },
  { path: "trainer_common.loss_extra_scale_ratio", bucket: "refused", accepts: isNot(1, 1.0), reason: "a3r does not scale the loss" },
  {
    path: "trainer_common.loss_weight_normalization_episode_level",
    bucket: "refused",
    accepts: isNot(false),
    reason: "a3r weighs every sample alike",
  },
  {
    path: "trainer_common.advantage_estimation_episode_level",
    bucket: "refused",
    accepts: isNot(false),
    reason: "a3r's GRPO groups are the samples of a task",
  },
  { path: "trainer_common.val_only", bucket: "refused", accepts: isNot(false), reason: "a3r's server always trains; run eval episodes (--eval) instead" },
];

const client = "the client runs the workflow, reads the tasks and computes the rewards";
const engine = "the engine is swarm.yaml's `model` (set it in the a3r: section or the server's swarm.yaml)";
const trainer = "the vllm engine's trainer settings are swarm.yaml's model.trainer";

const ignored: Ignored[] = [
  { path: "project_name", bucket: "ignored", why: "a name for AgentJet's loggers; a3r names runs by experiment_dir" },
  { path: "backbone", bucket: "ignored", why: "a3r is the backbone" },
  { path: "model.*", bucket: "ignored", why: engine },
  { path: "rollout.user_workflow", bucket: "ignored", why: client },
  { path: "rollout.tensor_model_parallel_size", bucket: "ignored", why: engine },
  { path: "rollout.n_vllm_engine", bucket: "ignored", why: engine },
  { path: "rollout.max_num_seqs", bucket: "ignored", why: engine },
  { path: "rollout.name", bucket: "ignored", why: engine },
  { path: "rollout.gpu_memory_utilization", bucket: "ignored", why: engine },
  { path: "rollout.mode", bucket: "ignored", why: "trinity's rollout mode; a3r serves every call as it comes" },
  { path: "rollout.ppo_max_token_len_per_gpu", bucket: "ignored", why: trainer },
  { path: "rollout.val_kwargs.*", bucket: "ignored", why: "eval episodes sample as their client asks (train_sampling applies to train episodes)" },
  { path: "rollout.multi_turn.max_steps", bucket: "ignored", why: "the turns of an episode are the client's loop; limits.max_episode_calls caps them" },
  { path: "rollout.multi_turn.expected_steps", bucket: "ignored", why: "trinity's batch-size estimate; a3r batches whole episodes" },
  { path: "task_reader.jsonl_dataset_file.*", bucket: "ignored", why: client },
  { path: "task_reader.env_service.*", bucket: "ignored", why: client },
  { path: "task_reader.huggingface_dat_repo.*", bucket: "ignored", why: client },
  { path: "task_reader.data_generation.*", bucket: "ignored", why: client },
  { path: "task_judge.*", bucket: "ignored", why: client },
  { path: "task_runner.*", bucket: "ignored", why: client },
  {
    path: "context_tracker.fix_retokenization_drift",
    bucket: "ignored",
    why: "a3r trains the engine's own token ids (tracking/training-samples.ts), so there is no drift to fix",
  },
  { path: "context_tracker.log_tool_format_check", bucket: "ignored", why: "AgentJet's logging" },
  { path: "context_tracker.log_tool_format_error_detail", bucket: "ignored", why: "AgentJet's logging" },
  { path: "context_tracker.detect_timeline_snap", bucket: "ignored", why: "AgentJet's diagnostics" },
  { path: "context_tracker.alien_llm_model", bucket: "ignored", why: "deprecated in AgentJet" },
  { path: "context_tracker.alien_llm_response_length", bucket: "ignored", why: "deprecated in AgentJet" },
  { path: "debug.*", bucket: "ignored", why: "AgentJet's debug backbone" },
  { path: "trainer_common.val_before_train", bucket: "ignored", why: "validation is the client's eval episodes" },
  { path: "trainer_common.val_pass_n", bucket: "ignored", why: "validation is the client's eval episodes" },
  { path: "trainer_common.val_max_num_task_each_validation", bucket: "ignored", why: "validation is the client's eval episodes" },
  { path: "trainer_common.val_max_num_task_clip_method", bucket: "ignored", why: "validation is the client's eval episodes" },
  { path: "trainer_common.val_print_to_markdown_file_path", bucket: "ignored", why: "AgentJet's logging" },
  { path: "trainer_common.train_print_to_markdown_file_path", bucket: "ignored", why: "AgentJet's logging" },
  { path: "trainer_common.test_freq", bucket: "ignored", why: "validation is the client's eval episodes" },
  { path: "trainer_common.nnodes", bucket: "ignored", why: engine },
  { path: "trainer_common.n_gpus_per_node", bucket: "ignored", why: engine },
  { path: "trainer_common.logger", bucket: "ignored", why: "a3r writes metrics.jsonl and GET /metrics" },
  { path: "trainer_common.fsdp_config.*", bucket: "ignored", why: "verl's offload settings" },
  { path: "trainer_common.optim.optimizer", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.optimizer_impl", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.lr_warmup_steps_ratio", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.lr_warmup_steps", bucket: "ignored", why: trainer },
  {
    path: "trainer_common.optim.total_training_steps",
    bucket: "ignored",
    why: "verl's scheduler horizon; a3r's is max_steps (trainer_common.total_training_steps)",
  },
  { path: "trainer_common.optim.weight_decay", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.betas", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.min_lr_ratio", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.num_cycles", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.lr_scheduler_type", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.zero_indexed_step", bucket: "ignored", why: trainer },
  { path: "trainer_common.optim.grad_clip", bucket: "ignored", why: trainer },
  { path: "trainer_common.kl_loss_type", bucket: "ignored", why: "a3r's engines use their own KL estimate" },
  { path: "trainer_common.ulysses_sequence_parallel_size", bucket: "ignored", why: trainer },
  { path: "trainer_common.checkpoint_base_dir", bucket: "ignored", why: "checkpoints live under the server's experiment_dir" },
  { path: "trainer_common.save_trajectory_as_json_file", bucket: "ignored", why: "AgentJet's logging" },
  { path: "trainer_verl.*", bucket: "ignored", why: "verl's own settings" },
  { path: "lora.*", bucket: "ignored", why: "the vllm engine's adapter is swarm.yaml's model.lora" },
  { path: "enable_swarm_mode", bucket: "ignored", why: "a3r's server is always a swarm server" },
  { path: "enable_interchange_server", bucket: "ignored", why: "a3r's server is the interchange" },
  { path: "interchange_server.*", bucket: "ignored", why: "a3r's server is the interchange (host and port are the server's)" },
  { path: "execute_test", bucket: "ignored", why: "AgentJet's own test harness" },
  { path: "execute_testing_lambda", bucket: "ignored", why: "AgentJet's own test harness" },
];

export const agentJetKeyRules: readonly KeyRule[] = [...mapped, ...refused, ...ignored];

/** The rule of a dotted ajet path (without `ajet.`), if any: exact, else the nearest `.*` above it. */
export function ruleOf(path: string): KeyRule | undefined {
  const exact = agentJetKeyRules.find((rule) => rule.path === path);
  if (exact) return exact;
  return agentJetKeyRules.find((rule) => rule.path.endsWith(".*") && (path === rule.path.slice(0, -2) || path.startsWith(rule.path.slice(0, -1))));
}

/** The madness checks a3r knows, for the error on an unknown one. */
export const knownMadnessChecks = madnessChecks;
