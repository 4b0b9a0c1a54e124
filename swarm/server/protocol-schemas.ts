import { z } from "zod";

/**
 * Request bodies of the swarm protocol (swarm/PROTOCOL.md §2). Objects are loose: clients
 * written for AgentJet may send fields a3r does not use, and those are ignored.
 */

const uuid = z.string().min(1, "must be a non-empty string").max(200);

export const claimEpisodeSchema = z.looseObject({
  client_uuid: uuid,
  episode_type: z.enum(["train", "eval"]).default("train"),
  discard_episode_timeout: z
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .nullable()
    .optional(),
  /** AgentJet's SwarmThrottlePolicy: the client's share of a batch and the task it is about to run. */
  throttle_policy: z
    .looseObject({
      ratio: z.number().positive().max(1000).default(1.5),
      expected_batch_size: z.number().optional(),
      expected_num_repeat: z.number().optional(),
      current_task_id: z.string().max(1000).nullable().optional(),
    })
    .nullable()
    .optional(),
});

/** Rewards and metrics beyond this are bugs in a client, and would overflow GRPO's sums. */
export const maxRewardMagnitude = 1e6;
const finite = z
  .number()
  .refine(Number.isFinite, "must be a finite number")
  .refine((value) => Math.abs(value) <= maxRewardMagnitude, `must be within ±${maxRewardMagnitude}`);
/** AgentJet allows a list of numbers where a number is expected; a3r takes their mean. */
const numberOrList = z
  .union([finite, z.array(finite).min(1, "give at least one number")])
  .transform((value) => (Array.isArray(value) ? value.reduce((sum, item) => sum + item, 0) / value.length : value));

export const maxLogMetricsPerEpisode = 64;
export const maxLogMetricNameLength = 64;

export const workflowOutputSchema = z.looseObject({
  /** null (AgentJet's WorkflowOutput default): "no reward", the episode is ended and never trained on. */
  reward: numberOrList.nullable(),
  is_success: z.boolean().nullable().optional(),
  metadata: z.looseObject({ task_id: z.string().optional() }).nullable().optional(),
  // Names are bounded: 150k distinct names once made /metrics 10 MB and the server 400 MB.
  log_metrics: z
    .record(z.string().min(1).max(maxLogMetricNameLength, `a log_metrics name of at most ${maxLogMetricNameLength} characters`), numberOrList)
    .refine((metrics) => Object.keys(metrics).length <= maxLogMetricsPerEpisode, `at most ${maxLogMetricsPerEpisode} log_metrics per episode`)
    .nullable()
    .optional(),
});

export const endEpisodeSchema = z.looseObject({
  client_uuid: uuid,
  episode_uuid: uuid,
  task_id: z.string().min(1).max(1000),
  workflow_output: workflowOutputSchema,
  declare_client_active: z.boolean().optional(),
});

export const abortEpisodeSchema = z.looseObject({
  client_uuid: uuid,
  episode_uuid: uuid,
  task_id: z.string().optional(),
  workflow_output: z.unknown().optional(),
});

export const episodeRefSchema = z.looseObject({ client_uuid: uuid, episode_uuid: uuid });
export const clientRefSchema = z.looseObject({ client_uuid: uuid });
/** get_episode_buffer: a named client_uuid is accepted and ignored (the caller is known by its key, PROTOCOL.md §7). */
export const episodeBufferSchema = z.looseObject({ client_uuid: uuid.optional() });
export const syncTrainConfigSchema = z.looseObject({ yaml_as_string: z.string().max(1_000_000) });
export const pushVerboseLogSchema = z.looseObject({ tag: z.string().max(200).default(""), message: z.string().max(10_000) });
export const resumeSchema = z.looseObject({ path: z.string().min(1).nullable().optional() });
export const emptySchema = z.unknown();
