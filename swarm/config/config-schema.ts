import { z } from "zod";
import { canonicalKeys } from "./config-keys.ts";
import { modelConfigSchema } from "./config-model.ts";
import { madnessChecks } from "../tracking/madness.ts";

/**
 * The swarm server's configuration (swarm.yaml). Every object is strict: an unknown key is
 * an error naming its path, because a misspelt knob silently falling back to its default
 * is the most expensive kind of bug in a multi-day training run.
 */

export const sampleCollectionMethods = [
  "rollout_until_finish_enough_episodes",
  "rollout_until_finish_enough_tasks",
  "rollout_until_finish_enough_non_dummy_tasks",
  "rollout_until_all_clients_agree_sync_weight",
  "rollout_until_any_client_agrees_sync_weight",
] as const;

export type SampleCollectionMethod = (typeof sampleCollectionMethods)[number];

/** Other spellings of a method that mean the same (AgentJet writes C5 as "...agree_sync_weight"). */
export const sampleCollectionMethodAliases: Readonly<Record<string, SampleCollectionMethod>> = {
  rollout_until_any_client_agree_sync_weight: "rollout_until_any_client_agrees_sync_weight",
};

/** Accepts a method name or an alias; returns the canonical name. */
const sampleCollectionMethodSchema = z.preprocess(
  (value) => (typeof value === "string" ? (sampleCollectionMethodAliases[value] ?? value) : value),
  z.enum(sampleCollectionMethods),
);

const positiveInteger = z.number().int().positive();
const nonNegativeInteger = z.number().int().nonnegative();
const positiveSeconds = z.number().positive();

const optimizerSchema = z.strictObject({
  lr: z.number().positive().default(0.2),
  kl_coef: z.number().nonnegative().default(0.001),
  /** PPO clip epsilon; the engines refuse more than 1, so the config does too (at load, with its line). */
  clip: z.number().positive().max(1).default(0.2),
});

/**
 * Fields that change how a training metric is measured, not only what is learned: the
 * leader reads this mark (`measures`) off the schema, and a campaign that varies one
 * compares configurations on fixed-protocol eval episodes instead (`eval_protocol`;
 * leader/design/measurement-protocol.ts).
 */
export const measurementMark = (why: string) => ({ measures: why });

const samplingSchema = z.strictObject({
  temperature: z
    .number()
    .nonnegative()
    .default(1)
    .meta(measurementMark("the reward of a train episode is sampled at this temperature: a greedier sampler scores higher without learning more")),
  top_p: z
    .number()
    .gt(0)
    .lte(1)
    .default(1)
    .meta(measurementMark("the reward of a train episode is sampled with this nucleus: a narrower one scores higher without learning more")),
  max_tokens: positiveInteger.default(16).meta(measurementMark("the reward of a train episode is measured on completions cut at this length")),
});

/**
 * Fixed-protocol evaluation: after each step in `at_steps` and each multiple of `every`, before the step's metrics are
 * published, the server hands every claim (train or eval) one of `episodes` numbered eval
 * episodes instead, all at the same sampling, on a task set fixed by `seed`, never trained
 * on, and records their mean as `protocol_eval_reward_mean` in that step's metrics. So
 * configurations that sample differently during training are compared the same way
 * (server/protocol-eval.ts). `sampling: config` takes `sampling` as the server starts;
 * set it explicitly when sampling is what the runs vary.
 */
const evalProtocolSchema = z
  .strictObject({
    /** 0 measures the untrained weights at a fresh start. */
    at_steps: z.array(nonNegativeInteger).optional(),
    /** Also after every this many steps (a scalar, so a blueprint override can set it). */
    every: positiveInteger.optional(),
    episodes: positiveInteger.max(4096).default(64),
    /** The seed the task set is drawn from (default: model.seed). */
    seed: nonNegativeInteger.optional(),
    // A union, so its fields are one leaf for override keys (`temperature` stays `sampling.temperature`).
    sampling: z.union([z.literal("config"), samplingSchema.partial()]).default("config"),
  })
  .refine((protocol) => (protocol.at_steps?.length ?? 0) > 0 || protocol.every !== undefined, "give at_steps (a list of steps) or every (a step interval)");

const limitsSchema = z.strictObject({
  /** A request with more messages is refused (400): bounds prompt memory per call. */
  max_messages_per_request: positiveInteger.default(256),
  /** Bodies larger than this are refused (413) before they are parsed. */
  max_request_body_bytes: positiveInteger.default(4 * 1024 * 1024),
  /** Chat completions one episode may make; the next one is refused (400). */
  max_episode_calls: positiveInteger.default(256),
  /** Request bytes one episode may send in all; with max_env_worker it bounds recorded-call memory. */
  max_episode_bytes: positiveInteger.default(64 * 1024 * 1024),
  /** Finished episodes remembered (pool + history); past it the oldest are dropped and counted. */
  max_cached_episodes: positiveInteger.default(4096),
  /**
   * The keys below are AgentJet's length and sample limits (`ajet.data.*`, `ajet.rollout.*`,
   * mapped by agentjet.ts); each is off unless set. Timelines one episode may give; past it
   * a random subset this large is trained (AgentJet's max_sample_per_task).
   */
  max_samples_per_episode: positiveInteger.optional(),
  /** A sample's context before its first trained token counts up to this many tokens (AgentJet's max_prompt_length)... */
  max_prompt_tokens: positiveInteger.optional(),
  /** ...and this many tokens after that are kept: a longer sample is cut (max_response_length). */
  max_response_tokens: positiveInteger.optional(),
  /** A request's max_tokens is lowered to this (max_response_length_in_one_turn). */
  max_tokens_per_call: positiveInteger.optional(),
  /**
   * Context window (max_model_len): a call whose prompt leaves fewer than max_tokens_per_call
   * (else its max_tokens) tokens is answered with AgentJet's overflow message, not generated
   * and not trained on.
   */
  max_model_len: positiveInteger.optional(),
});

/** AgentJet's madness checks (tracking/madness.ts): a mad episode is trained on `reward` instead of its own. */
const madnessSchema = z.strictObject({
  checklist: z.array(z.enum(madnessChecks)).default([]),
  reward: z.number().default(0),
  /** Calls after the first mad one are not trained on (AgentJet's agent_madness_termination). */
  terminate: z.boolean().default(true),
});

/** The configuration with its keys in their one (snake_case) spelling. */
export const swarmConfigObject = z.strictObject({
  model: modelConfigSchema.default({ kind: "embedded" }),
  train_batch_size: positiveInteger.default(4),
  num_repeat: positiveInteger.default(4),
  swarm_mode_sample_collection_method: sampleCollectionMethodSchema.default("rollout_until_finish_enough_tasks"),
  /** Cap on concurrently claimed episodes; claims past it fail with a retryable cause. */
  max_env_worker: positiveInteger.default(64),
  /**
   * Cap on the episodes one client_uuid may hold at once (default: max_env_worker, so one
   * client may use every slot). A claim past it is refused with 429 and the cap named.
   */
  max_claims_per_client: positiveInteger.optional(),
  /**
   * The longest discard_episode_timeout a claim may ask for (seconds). A longer one is
   * clamped to this, and the claim's answer says so; an idle claim cannot hold a slot (or
   * ROLLING_POST) for days.
   */
  max_discard_episode_timeout: positiveSeconds.default(3600),
  /**
   * Seconds ROLLING_POST waits for claimed episodes to finish once the batch is fixed.
   * Past it the stragglers are aborted (counted as drain_aborted_episodes in the step's
   * metrics) and the step trains, however long their discard_episode_timeout.
   */
  drain_timeout: positiveSeconds.default(600),
  optimizer: optimizerSchema.default({ lr: 0.2, kl_coef: 0.001, clip: 0.2 }),
  sampling: samplingSchema.default({ temperature: 1, top_p: 1, max_tokens: 16 }),
  /** Checkpoint every this many steps (0: only on stop). */
  save_freq: nonNegativeInteger.default(10),
  /** Relative paths are resolved against the directory of the config file. */
  experiment_dir: z.string().min(1).default("./swarm-experiment"),
  host: z.string().min(1).default("127.0.0.1"),
  /** 0 picks a free port (the server prints the one it got). */
  port: z.number().int().min(0).max(65535).default(10086),
  compare_level: z.enum(["text", "token"]).default("token"),
  /** Seconds an episode may stay idle when its claim names no discard_episode_timeout. */
  episode_idle_timeout: positiveSeconds.default(600),
  /** Seconds without a call after which a client no longer counts as active (C4, C5). */
  client_idle_timeout: positiveSeconds.default(600),
  /** Stop training after this many optimizer steps (0: never). */
  max_steps: nonNegativeInteger.default(0),
  limits: limitsSchema.default({
    max_messages_per_request: 256,
    max_request_body_bytes: 4 * 1024 * 1024,
    max_episode_calls: 256,
    max_episode_bytes: 64 * 1024 * 1024,
    max_cached_episodes: 4096,
  }),
  /** Required on control endpoints when set (also from --admin-token or A3R_SWARM_ADMIN_TOKEN). */
  admin_token: z.string().min(8).optional(),
  /**
   * end_episode and abort_episode must carry the episode's key (`Authorization: Bearer
   * <openai_api_key>`). Default: on once an admin token is set or the server listens
   * beyond loopback; off otherwise, where a keyless end is still accepted only from the OS
   * user running the server (AgentJet's client sends no key), never from another local
   * user (swarm/PROTOCOL.md §7). A key that is sent must always be the episode's own.
   */
  require_episode_key: z.boolean().optional(),
  /**
   * Absolute directories a client may name over HTTP (sync_train_config's experiment_dir,
   * resume_from_checkpoint's path), besides the server's start directory and this file's
   * experiment_dir (swarm/PROTOCOL.md §6).
   */
  allowed_roots: z.array(z.string().regex(/^\//, "must be an absolute path")).optional(),
  /** Distinct client_uuids that may hold episodes claimed without a credential (default 32; PROTOCOL.md §2). */
  max_unkeyed_claimers: positiveInteger.optional(),
  /** C4/C5: seconds a step stays observable (ROLLING_POST to leaving WEIGHT_SYNCING) for polling clients (default 8; PROTOCOL.md §1). */
  sync_observable_seconds: z.number().min(0).max(600).optional(),
  /**
   * Timeline merging across calls offered different tool lists (swarm/tracking/MERGE.md).
   * Off: a changed tool list refuses the merge, because chat templates render the tools
   * into the prompt. On: AgentJet's faster choice (fewer samples, less faithful context).
   */
  ignore_tools: z.boolean().default(false),
  /** Timeline merging exactly as AgentJet merges (tracking/MERGE.md, the last section). */
  agentjet_compat: z.boolean().default(false),
  /** Tools are not passed to the engine nor tool calls parsed (AgentJet's force_disable_toolcalls). */
  disable_tool_calls: z.boolean().default(false),
  madness: madnessSchema.default({ checklist: [], reward: 0, terminate: true }),
  /**
   * Sampling parameters on train episodes. `server` (default, as AgentJet): the client's
   * temperature and top_p are ignored (named in x-swarm-warnings) and `sampling` applies,
   * so the samples come from the policy the optimizer assumes. `client`: honoured.
   * Eval episodes always honour the client.
   */
  train_sampling: z.enum(["server", "client"]).default("server"),
  /** Inserted as the first message of a request that has no system message (all gateway endpoints). */
  default_system_message: z.string().min(1).optional(),
  /**
   * Reproducible training: the same model.seed gives the same curve whatever the load
   * (swarm/engines/README.md, "Deterministic mode"). The server numbers each step's
   * episodes, tells each claim which task to run, seeds every completion from the episode,
   * and fixes a batch only when its whole round has ended; costs throughput. C1-C3 only
   * (the server refuses it with C4/C5, where when clients agree depends on timing).
   */
  deterministic: z.boolean().default(false),
  eval_protocol: evalProtocolSchema.optional(),
});

/**
 * The configuration as any reader checks it (the server, the leader's audit): old
 * camelCase spellings are renamed first (config-keys.ts), so a file that still uses them
 * passes. The loader (config.ts) also reports each of them as deprecated.
 */
export const swarmConfigSchema = z.preprocess((value) => canonicalKeys(value, swarmConfigObject).value, swarmConfigObject);

export type SwarmConfigInput = z.input<typeof swarmConfigObject>;
/** The parsed configuration, with `experiment_dir` made absolute. */
export type SwarmConfig = z.output<typeof swarmConfigObject>;
