import type { SampleLimits } from "../tracking/training-samples.ts";
import type { SwarmConfig } from "./config-schema.ts";

/** swarm.yaml's per-episode sample limits and madness reward, as buildTrainingSamples takes them (each only when set). */
export function sampleLimitsOf(config: SwarmConfig): SampleLimits {
  const { max_samples_per_episode: maxSamples, max_prompt_tokens: maxPromptTokens, max_response_tokens: maxResponseTokens } = config.limits;
  return {
    ...(maxSamples === undefined ? {} : { maxSamples }),
    ...(maxPromptTokens === undefined ? {} : { maxPromptTokens }),
    ...(maxResponseTokens === undefined ? {} : { maxResponseTokens }),
    ...(config.madness.checklist.length === 0 ? {} : { madness: config.madness }),
  };
}
