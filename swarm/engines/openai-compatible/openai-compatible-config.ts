import { z } from "zod";

export const openAiCompatibleEngineConfigSchema = z.strictObject({
  kind: z.literal("openai-compatible"),
  /** Base URL of the upstream including /v1, e.g. http://127.0.0.1:8000/v1. */
  base_url: z.string().url(),
  api_key: z.string().optional(),
  model: z.string().min(1),
  /** Shell command run once per optimizer step; see openai-compatible/README.md. */
  trainer_command: z.string().min(1).optional(),
  /** Path on the upstream's origin that loads a LoRA adapter (default /v1/load_lora_adapter). */
  load_adapter_path: z.string().startsWith("/").optional(),
  /**
   * Where token ids come from. `upstream` (default): from the upstream's answer (vLLM ≥
   * 0.10.2 with return_token_ids); an answer without them fails its request, since
   * re-tokenizing with another tokenizer would train on ids the model never saw. `word`:
   * the upstream serves a model with a3r's word tokenizer (the embedded engine's, as the
   * tiny models do), so re-tokenizing is exact and stands in when ids are missing.
   */
  tokenizer: z.enum(["upstream", "word"]).default("upstream"),
  experiment_dir: z.string().min(1),
});

export type OpenAiCompatibleEngineConfig = z.input<typeof openAiCompatibleEngineConfigSchema>;
