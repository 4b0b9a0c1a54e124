import { z } from "zod";
import { optimizerConfigSchema } from "../port/engine-config.ts";
import { refuseUntrainableArguments, vllmLoraRanks } from "./vllm-arguments.ts";

/** argv of a process, with `{placeholder}`s the engine fills in (see vllm/README.md). */
const commandTemplate = z.array(z.string().min(1)).min(1);

export const vllmEngineConfigSchema = z.strictObject({
  kind: z.literal("vllm"),
  /** The base model: a Hugging Face id or folder for vLLM/transformers, or a tiny-model folder (swarm/python). */
  model: z.string().min(1),
  seed: z.number().int().optional(),
  optimizer: optimizerConfigSchema,
  experiment_dir: z.string().min(1),
  /** The Python the reference server and trainer run with (default python3; /usr/bin/python3 on Debian). */
  python: z.string().min(1).default("python3"),
  lora: z
    .strictObject({
      /** vLLM's --max-lora-rank is this rounded up to one it accepts (vllm-arguments.ts: 1, 8, 16, ..., 512). */
      rank: z
        .number()
        .int()
        .positive()
        .max(
          vllmLoraRanks.at(-1)!,
          `vLLM serves LoRA ranks up to ${vllmLoraRanks.at(-1)} (--max-lora-rank ${vllmLoraRanks.join("|")}): set model.lora.rank to at most that`,
        )
        .default(8),
      alpha: z.number().positive().default(16),
      dropout: z.number().min(0).max(1).default(0),
      target_modules: z.array(z.string().min(1)).optional(),
    })
    .default({ rank: 8, alpha: 16, dropout: 0 }),
  inference: z
    .strictObject({
      /** `vllm` (vllm serve) or `reference` (a3r's Python server: no vLLM needed); `command` overrides either. */
      server: z.enum(["vllm", "reference"]).default("vllm"),
      command: commandTemplate.optional(),
      extra_args: z.array(z.string()).default([]),
      host: z.string().min(1).default("127.0.0.1"),
      /** 0 picks a free port at every start. */
      port: z.number().int().min(0).max(65535).default(0),
      /** CUDA devices of the inference server (CUDA_VISIBLE_DEVICES); omitted = inherited. */
      gpus: z.array(z.number().int().min(0)).optional(),
      /** vLLM's --gpu-memory-utilization; lower it when the trainer shares the GPU (colocated). */
      gpu_memory_utilization: z.number().positive().max(1).default(0.85),
      start_timeout_ms: z.number().int().positive().default(600_000),
      env: z.record(z.string(), z.string()).default({}),
    })
    // Arguments that change sampling or log-probs in a way the trainer cannot correct for (vllm-arguments.ts).
    .superRefine(refuseUntrainableArguments)
    .default({ server: "vllm", extra_args: [], host: "127.0.0.1", port: 0, gpu_memory_utilization: 0.85, start_timeout_ms: 600_000, env: {} }),
  trainer: z
    .strictObject({
      command: commandTemplate.optional(),
      device: z.enum(["auto", "cpu", "cuda"]).default("auto"),
      gpus: z.array(z.number().int().min(0)).optional(),
      micro_batch_tokens: z.number().int().positive().default(4096),
      gradient_checkpointing: z.boolean().default(false),
      max_grad_norm: z.number().positive().default(1),
      weight_decay: z.number().min(0).default(0),
      env: z.record(z.string(), z.string()).default({}),
      /** Trainer processes, one per GPU of `gpus`: above 1 the trainer runs under torchrun, rank 0 speaking the protocol. */
      nprocs: z.number().int().min(1).max(64).default(1),
      /** ddp: every rank holds the model, the batch is sharded by tokens, gradients are all-reduced (a3r_swarm/trainer/distributed.py). */
      strategy: z.enum(["ddp"]).default("ddp"),
    })
    .superRefine((trainer, context) => {
      if (trainer.nprocs > 1 && trainer.command)
        context.addIssue({
          code: "custom",
          path: ["nprocs"],
          message: "nprocs starts the trainer under torchrun itself: leave trainer.command out, or put torchrun in it and drop nprocs",
        });
      if (trainer.nprocs > 1 && trainer.gpus && trainer.gpus.length !== trainer.nprocs)
        context.addIssue({
          code: "custom",
          path: ["gpus"],
          message: `one GPU per trainer rank: ${trainer.nprocs} ranks but ${trainer.gpus.length} GPUs listed`,
        });
    })
    // torchrun (the venv's torch.distributed.run), one process per rank, on this node.
    .transform((trainer) =>
      trainer.nprocs > 1
        ? { ...trainer, command: ["{python}", "-m", "torch.distributed.run", "--standalone", `--nproc_per_node=${trainer.nprocs}`, "-m", "a3r_swarm.trainer"] }
        : trainer,
    )
    .default({
      device: "auto",
      micro_batch_tokens: 4096,
      gradient_checkpointing: false,
      max_grad_norm: 1,
      weight_decay: 0,
      env: {},
      nprocs: 1,
      strategy: "ddp",
    }),
  /** Restarts of a dead inference server or trainer before the engine gives up. */
  max_restarts: z.number().int().min(0).default(5),
});

export type VllmEngineConfig = z.output<typeof vllmEngineConfigSchema>;
export type VllmEngineConfigInput = z.input<typeof vllmEngineConfigSchema>;
