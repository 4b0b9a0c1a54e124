import { EngineError } from "../port/engine-error.ts";

/**
 * Fills `{name}` placeholders in a command template, one argv entry at a time (no shell:
 * a model name or path is never parsed as shell syntax). An unknown placeholder is a
 * configuration error naming it, not a silent literal.
 */
export function fillTemplate(template: readonly string[], values: Readonly<Record<string, string>>, field: string): string[] {
  return template.map((part) =>
    part.replace(/\{([a-z_]+)\}/g, (_whole, name: string) => {
      const value = values[name];
      if (value === undefined) {
        throw new EngineError(
          "ENGINE_NOT_LOADED",
          `${field}: unknown placeholder {${name}}`,
          `use one of ${Object.keys(values)
            .map((key) => `{${key}}`)
            .join(", ")}`,
        );
      }
      return value;
    }),
  );
}

/**
 * `vllm serve` with runtime LoRA loading, for vLLM ≥ 0.10.2 (`return_token_ids`; the engine
 * probes for it at start). `{max_lora_rank}` is model.lora.rank rounded up to a rank vLLM
 * accepts; two adapters at once (the serving one and the one a sync loads); sampling and
 * log-probs as the trainer assumes them (vllm-arguments.ts).
 */
export const vllmServeTemplate: readonly string[] = [
  "vllm",
  "serve",
  "{model}",
  "--host",
  "{host}",
  "--port",
  "{port}",
  "--served-model-name",
  "{served_model_name}",
  "--enable-lora",
  "--max-lora-rank",
  "{max_lora_rank}",
  "--max-loras",
  "{max_loras}",
  "--generation-config",
  "vllm",
  "--logprobs-mode",
  "processed_logprobs",
  "--gpu-memory-utilization",
  "{gpu_memory_utilization}",
  "--seed",
  "{seed}",
];

/** a3r's Python reference server (swarm/python): the same flags, for machines without vLLM. */
export const referenceServerTemplate: readonly string[] = [
  "{python}",
  "-m",
  "a3r_swarm.server",
  "--model",
  "{model}",
  "--host",
  "{host}",
  "--port",
  "{port}",
  "--served-model-name",
  "{served_model_name}",
  "--enable-lora",
  "--max-lora-rank",
  "{max_lora_rank}",
  "--max-loras",
  "{max_loras}",
  "--generation-config",
  "vllm",
  "--logprobs-mode",
  "processed_logprobs",
  "--seed",
  "{seed}",
];

/** The persistent trainer (swarm/python/a3r_swarm/trainer), JSON lines on stdin/stdout. */
export const trainerTemplate: readonly string[] = ["{python}", "-m", "a3r_swarm.trainer"];
