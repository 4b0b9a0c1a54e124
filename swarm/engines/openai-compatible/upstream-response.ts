import { z } from "zod";
import { isFiniteNumber, isIntegerArray, isNullish, isRecord } from "../port/json-shape.ts";

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

/**
 * chatCompletionResponseSchema by hand, for the hot path (see ../port/json-shape.ts): true only
 * for an answer the schema accepts as it is; anything else goes to zod, which names what is
 * wrong. Keep the two in step: upstream-response.test.ts compares them.
 */
export function isPlainChatCompletion(value: unknown): value is ChatCompletionResponse {
  if (!isRecord(value) || !(isNullish(value.prompt_token_ids) || isIntegerArray(value.prompt_token_ids))) return false;
  const { choices } = value;
  if (!Array.isArray(choices) || choices.length === 0) return false;
  for (const choice of choices) if (!isPlainChoice(choice)) return false;
  return true;
}

function isPlainChoice(choice: unknown): boolean {
  if (!isRecord(choice)) return false;
  const { message, logprobs } = choice;
  if (!isRecord(message) || !(isNullish(message.content) || typeof message.content === "string")) return false;
  if (!(isNullish(choice.finish_reason) || typeof choice.finish_reason === "string")) return false;
  if (!(isNullish(choice.token_ids) || isIntegerArray(choice.token_ids))) return false;
  if (!(isNullish(choice.prompt_token_ids) || isIntegerArray(choice.prompt_token_ids))) return false;
  if (isNullish(logprobs)) return true;
  if (!isRecord(logprobs)) return false;
  const entries = logprobs.content;
  if (isNullish(entries)) return true;
  if (!Array.isArray(entries)) return false;
  for (const entry of entries) if (!isRecord(entry) || typeof entry.token !== "string" || !isFiniteNumber(entry.logprob)) return false;
  return true;
}

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
