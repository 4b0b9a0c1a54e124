import { z } from "zod";

/**
 * The parts of an OpenAI-compatible chat completion response the engine reads. vLLM adds
 * token ids when asked: `logprobs.content[].token` as "token_id:<n>" with
 * `return_tokens_as_token_ids`, and `prompt_token_ids` / `choices[].token_ids` with
 * `return_token_ids`. Everything else is optional and passes through.
 */
export const chatCompletionResponseSchema = z.looseObject({
  prompt_token_ids: z.array(z.number().int()).nullish(),
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({ content: z.string().nullish() }),
        finish_reason: z.string().nullish(),
        token_ids: z.array(z.number().int()).nullish(),
        prompt_token_ids: z.array(z.number().int()).nullish(),
        logprobs: z.looseObject({ content: z.array(z.looseObject({ token: z.string(), logprob: z.number() })).nullish() }).nullish(),
      }),
    )
    .min(1),
});

export type ChatCompletionResponse = z.infer<typeof chatCompletionResponseSchema>;

/** Token ids from "token_id:<n>" logprob entries, or undefined when any entry is a plain string. */
export function tokenIdsFromLogprobs(entries: ReadonlyArray<{ token: string }>): number[] | undefined {
  const ids: number[] = [];
  for (const entry of entries) {
    const match = /^token_id:(\d+)$/.exec(entry.token);
    if (!match) return undefined;
    ids.push(Number(match[1]));
  }
  return ids;
}

export const trainerOutputSchema = z.looseObject({
  adapter_path: z.string().min(1),
  metrics: z.record(z.string(), z.number()).optional(),
});

/** The last line of the trainer's stdout that parses as a JSON object. */
export function lastJsonLine(stdout: string): unknown {
  const lines = stdout
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  for (let index = lines.length - 1; index >= 0; index--) {
    const line = lines[index]!;
    if (!line.startsWith("{")) continue;
    try {
      return JSON.parse(line);
    } catch {}
  }
  return undefined;
}
