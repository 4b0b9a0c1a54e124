import type { ChatMessage } from "../engines/port/engine.ts";

/** One chat completion of an episode as the server saw it: a timeline. */
export interface RecordedCall {
  callIndex: number;
  /** Set by multi-agent clients; calls of different agents never merge. */
  agentName?: string;
  messages: ChatMessage[];
  tools?: unknown[];
  promptTokenIds: number[];
  completionTokenIds: number[];
  completionText: string;
  completionLogprobs?: number[];
  /** The temperature and top_p the completion was sampled with (the trainer weighs its tokens at them). */
  sampling?: { temperature: number; topP: number };
  time: number;
}

export type CompareLevel = "text" | "token";
