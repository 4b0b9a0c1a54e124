import { z } from "zod";

/**
 * What the engine kinds share of their configuration. Each kind's own schema is in its
 * folder (`embedded/embedded-kind.ts`, ...); the union of all is the registry's
 * (`engine-registry.ts`). Keys are snake_case, as in swarm.yaml. Sampling defaults
 * (temperature, top_p, max_tokens) are not here: the server passes them per request.
 */
export const optimizerConfigSchema = z.strictObject({
  lr: z.number().positive(),
  kl_coef: z.number().min(0),
  /** PPO clip epsilon. */
  clip: z.number().positive().max(1),
});

export type OptimizerConfig = z.infer<typeof optimizerConfigSchema>;

/** An engine configuration of any registered kind, as given (the kind's schema checks the rest). */
export interface EngineConfig {
  kind: string;
  experiment_dir: string;
  [key: string]: unknown;
}
