/**
 * The engine port: what the swarm server needs from whatever holds the trainable policy.
 *
 * Three kinds (engine-registry.ts): `embedded` (a small CPU policy in TypeScript that really
 * learns), `openai-compatible` (inference proxied to an upstream server such as vLLM,
 * gradient step run by an external trainer command) and `vllm` (a managed inference server
 * and a persistent Python trainer). All pass the same engine conformance suite.
 *
 * Deliberately not part of the contract: HTTP, episodes, batching, credentials (the server
 * owns those); how weights are laid out on disk (each engine owns its checkpoint format);
 * tool-call execution (clients run their tools; the engine only sees messages).
 */

export type ChatRole = "system" | "user" | "assistant" | "tool";

export interface ChatMessage {
  role: ChatRole;
  content: string;
  name?: string;
  tool_call_id?: string;
}

export interface GenerateRequest {
  messages: ChatMessage[];
  /** Tool schemas as sent by the client; engines that cannot use them ignore them. */
  tools?: unknown[];
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  stop?: string[];
  seed?: number;
  signal?: AbortSignal;
}

export interface GenerateResult {
  text: string;
  finishReason: "stop" | "length";
  /** The prompt as the engine tokenized it (encodeChat(messages, {addGenerationPrompt: true})). */
  promptTokenIds: number[];
  /** Exactly the tokens the policy sampled, including its end-of-turn token if it emitted one. */
  completionTokenIds: number[];
  /** Log-probability of each completion token under the sampling policy, when known. */
  completionLogprobs?: number[];
  /** Parameters of the engine the request was ignored for (e.g. "tools"), as warnings. */
  warnings?: string[];
}

/** A rendered conversation and where each message sits in it. */
export interface EncodedChat {
  tokenIds: number[];
  /** One span per input message: [start, end) into tokenIds. */
  messageSpans: Array<{ start: number; end: number }>;
}

/** One training sample after timeline merging (see swarm/tracking). */
export interface TrainingSample {
  taskId: string;
  episodeUuid: string;
  tokenIds: number[];
  /** 1 exactly on tokens the policy generated, 0 elsewhere; same length as tokenIds. */
  lossMask: number[];
  /** Sampling log-probs aligned with tokenIds (undefined where not generated or unknown). */
  logprobs?: Array<number | undefined>;
  reward: number;
  /**
   * The sampling its trained tokens were drawn with (the request's, after the server's
   * `train_sampling` rule), when known: the trainer computes log-probs at that temperature.
   * Batch files spell them `temperature` and `top_p` (swarm/python/README.md).
   */
  temperature?: number;
  topP?: number;
}

export interface TrainResult {
  /** Per-step training metrics such as loss, kl, grad_norm, clip_fraction, tokens. */
  metrics: Record<string, number>;
}

export interface Engine {
  readonly kind: string;
  /** Loads weights (fresh or from a checkpoint) and readies inference. */
  load(): Promise<void>;
  /**
   * Tokenizes a conversation. Rendering is message-by-message concatenation so that a
   * conversation extending another shares its token prefix (timeline merging relies on it).
   */
  encodeChat(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): EncodedChat;
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /**
   * One optimizer step on a batch. Must not block the event loop for long (the server keeps
   * answering status calls during WEIGHT_SYNCING): CPU-heavy work runs off the main thread.
   * Resolves once the new weights serve inference.
   */
  train(batch: TrainingSample[], step: number): Promise<TrainResult>;
  /** Writes a checkpoint for `step` under `directory`; returns its path. */
  save(directory: string, step: number): Promise<string>;
  /** Restores a checkpoint; returns the global step it was taken at. */
  restore(path: string): Promise<number>;
  close(): Promise<void>;
}
