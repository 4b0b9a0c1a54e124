import type OpenAI from "openai";

/**
 * What a swarm client task module default-exports (`a3r swarm client <task>` imports it).
 *
 * The task owns its prompts and its reward; it does not own episodes, credentials or
 * retries (the client runner does). `playEpisode` is the episode's whole logic with the one
 * policy call passed in as `ask`; `runEpisode` is `playEpisode` over a real OpenAI client,
 * so the same prompts and scoring serve both the swarm and in-process training.
 */
export interface TaskMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface TaskInstance {
  /** Episodes of the same task share this id; GRPO compares them with each other. */
  taskId: string;
  [key: string]: unknown;
}

export interface EpisodeOutcome {
  reward: number;
  isSuccess: boolean;
  logMetrics?: Record<string, number>;
}

export interface AskOptions {
  maxTokens?: number;
}

/** One call to the policy: the conversation so far in, the assistant's answer text out. */
export type AskPolicy = (messages: TaskMessage[], options: AskOptions) => Promise<string>;

export interface SwarmTask<Task extends TaskInstance = TaskInstance> {
  name: string;
  description: string;
  sampleTask(seed: number): Task;
  runEpisode(openai: OpenAI, task: Task): Promise<EpisodeOutcome>;
  playEpisode(task: Task, ask: AskPolicy): Promise<EpisodeOutcome>;
}

/** `ask` over the npm openai client; the model name is accepted as given by swarm servers. */
export function askThroughOpenAI(openai: OpenAI, model = "policy"): AskPolicy {
  return async (messages, options) => {
    const completion = await openai.chat.completions.create({
      model,
      messages,
      ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
    });
    return completion.choices[0]?.message.content ?? "";
  };
}

/** The first word of an answer, lower-case, without punctuation ("" if none). */
export function firstWord(answer: string): string {
  return answer.toLowerCase().match(/[\p{L}\p{N}]+/u)?.[0] ?? "";
}

/** A stable pseudo-random integer in [0, modulo) from a seed (tasks must be reproducible). */
export function seededIndex(seed: number, salt: number, modulo: number): number {
  let value = Math.imul((seed ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0, 0x85ebca6b);
  value ^= value >>> 13;
  value = Math.imul(value, 0xc2b2ae35);
  value ^= value >>> 16;
  return (value >>> 0) % modulo;
}
