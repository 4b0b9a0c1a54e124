import { z } from "zod";

/**
 * Engine configuration as nested into the swarm server's YAML. Unknown keys are errors.
 * Sampling defaults (temperature, top_p, max_tokens) are not here: the server passes them
 * per request.
 */
export const optimizerConfigSchema = z.strictObject({
  lr: z.number().positive(),
  klCoef: z.number().min(0),
  /** PPO clip epsilon. */
  clip: z.number().positive().max(1),
});

export const embeddedModelOptionsSchema = z.strictObject({
  /** Words the policy can say (lower-case, one word each); defaults to the example tasks' words. */
  vocabulary: z.array(z.string().min(1)).min(1).optional(),
  /** log2 of the number of hashed feature rows (default 15; each array is 2^bits x (words + 1) floats). */
  featureBits: z.number().int().min(8).max(20).optional(),
  /** Run the optimizer step in a worker thread (default true; false is for tight in-process loops). */
  trainOffThread: z.boolean().optional(),
});

export const embeddedEngineConfigSchema = z.strictObject({
  kind: z.literal("embedded"),
  seed: z.number().int().optional(),
  optimizer: optimizerConfigSchema,
  experimentDir: z.string().min(1),
  embedded: embeddedModelOptionsSchema.optional(),
});

export const openAiCompatibleEngineConfigSchema = z.strictObject({
  kind: z.literal("openai-compatible"),
  /** Base URL of the upstream including /v1, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: z.string().url(),
  apiKey: z.string().optional(),
  model: z.string().min(1),
  /** Shell command run once per optimizer step; see openai-compatible/README.md. */
  trainerCommand: z.string().min(1).optional(),
  /** Path on the upstream's origin that loads a LoRA adapter (default /v1/load_lora_adapter). */
  loadAdapterPath: z.string().startsWith("/").optional(),
  experimentDir: z.string().min(1),
});

/** argv of a process, with `{placeholder}`s the engine fills in (see vllm/README.md). */
const commandTemplate = z.array(z.string().min(1)).min(1);

export const vllmEngineConfigSchema = z.strictObject({
  kind: z.literal("vllm"),
  /** The base model: a Hugging Face id or folder for vLLM/transformers, or a tiny-model folder (swarm/python). */
  model: z.string().min(1),
  seed: z.number().int().optional(),
  optimizer: optimizerConfigSchema,
  experimentDir: z.string().min(1),
  /** The Python the reference server and trainer run with (default python3; /usr/bin/python3 on Debian). */
  python: z.string().min(1).default("python3"),
  lora: z
    .strictObject({
      rank: z.number().int().positive().default(8),
      alpha: z.number().positive().default(16),
      dropout: z.number().min(0).max(1).default(0),
      targetModules: z.array(z.string().min(1)).optional(),
    })
    .default({ rank: 8, alpha: 16, dropout: 0 }),
  inference: z
    .strictObject({
      /** `vllm` (vllm serve) or `reference` (a3r's Python server: no vLLM needed); `command` overrides either. */
      server: z.enum(["vllm", "reference"]).default("vllm"),
      command: commandTemplate.optional(),
      extraArgs: z.array(z.string()).default([]),
      host: z.string().min(1).default("127.0.0.1"),
      /** 0 picks a free port at every start. */
      port: z.number().int().min(0).max(65535).default(0),
      /** CUDA devices of the inference server (CUDA_VISIBLE_DEVICES); omitted = inherited. */
      gpus: z.array(z.number().int().min(0)).optional(),
      /** vLLM's --gpu-memory-utilization; lower it when the trainer shares the GPU (colocated). */
      gpuMemoryUtilization: z.number().positive().max(1).default(0.85),
      startTimeoutMs: z.number().int().positive().default(600_000),
      env: z.record(z.string(), z.string()).default({}),
    })
    .default({ server: "vllm", extraArgs: [], host: "127.0.0.1", port: 0, gpuMemoryUtilization: 0.85, startTimeoutMs: 600_000, env: {} }),
  trainer: z
    .strictObject({
      command: commandTemplate.optional(),
      device: z.enum(["auto", "cpu", "cuda"]).default("auto"),
      gpus: z.array(z.number().int().min(0)).optional(),
      microBatchTokens: z.number().int().positive().default(4096),
      gradientCheckpointing: z.boolean().default(false),
      maxGradNorm: z.number().positive().default(1),
      weightDecay: z.number().min(0).default(0),
      env: z.record(z.string(), z.string()).default({}),
    })
    .default({ device: "auto", microBatchTokens: 4096, gradientCheckpointing: false, maxGradNorm: 1, weightDecay: 0, env: {} }),
  /** Restarts of a dead inference server or trainer before the engine gives up. */
  maxRestarts: z.number().int().min(0).default(5),
});

export const engineConfigSchema = z.discriminatedUnion("kind", [embeddedEngineConfigSchema, openAiCompatibleEngineConfigSchema, vllmEngineConfigSchema]);

export type OptimizerConfig = z.infer<typeof optimizerConfigSchema>;
export type EmbeddedModelOptions = z.infer<typeof embeddedModelOptionsSchema>;
export type EmbeddedEngineConfig = z.infer<typeof embeddedEngineConfigSchema>;
export type OpenAiCompatibleEngineConfig = z.infer<typeof openAiCompatibleEngineConfigSchema>;
export type VllmEngineConfig = z.output<typeof vllmEngineConfigSchema>;
export type VllmEngineConfigInput = z.input<typeof vllmEngineConfigSchema>;
export type EngineConfig = z.input<typeof engineConfigSchema>;
export type ParsedEngineConfig = z.output<typeof engineConfigSchema>;
