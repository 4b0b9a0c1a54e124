import type { SwarmConfig } from "../config/config-schema.ts";
import type { ChatMessage, Engine, GenerateResult } from "../engines/port/engine.ts";

/**
 * AgentJet's configuration form as the server's sync_train_config takes it: the one
 * translation lives in swarm/config/agentjet.ts (swarm check and swarm serve --config use it
 * too); this module is the server's entry to it, with the per-call limits the gateway
 * applies (AgentJet's max_response_length_in_one_turn and max_model_len).
 */
export { AgentJetConfigError, applyAgentJetConfig, isAgentJetConfig, type AgentJetMapping } from "../config/agentjet.ts";

const templateSlack = 256;
const perMessageSlack = 16;

/** What AgentJet answers in place of a call whose prompt leaves no room (its overflow response). */
export const contextOverflowText = "ajet_proxy: Exceeded max model context length.";

/** A request's max_tokens under `limits.max_tokens_per_call` (AgentJet's max_response_length_in_one_turn) and the gateway's ceiling. */
export function callMaxTokens(config: SwarmConfig, requested: number | undefined, ceiling: number): number {
  return Math.min(requested ?? config.sampling.max_tokens, config.limits.max_tokens_per_call ?? ceiling, ceiling);
}

/**
 * AgentJet's context check (`limits.max_model_len`): a prompt of at least max_model_len -
 * max_tokens_per_call tokens (or the call's max_tokens without that cap) is not generated.
 * AgentJet answers its overflow message and tracks nothing more of the call; so does a3r,
 * and the answer's x-swarm-warnings says why. The prompt is counted as the engine renders
 * the messages (tool schemas a template adds are not counted).
 */
export function contextOverflow(
  config: SwarmConfig,
  engine: Pick<Engine, "encodeChat">,
  messages: ChatMessage[],
  maxTokens: number,
): { result: GenerateResult; warning: string } | undefined {
  const limit = config.limits.max_model_len;
  if (limit === undefined) return undefined;
  const room = limit - (config.limits.max_tokens_per_call ?? maxTokens);
  // A token is at least one byte of UTF-8; the template adds a few per message and maybe a
  // default system prompt. Below that bound the prompt fits, and the gateway's hot path
  // tokenizes nothing twice.
  let bound = templateSlack;
  for (const message of messages) bound += Buffer.byteLength(message.content, "utf8") + perMessageSlack;
  if (bound < room) return undefined;
  const promptTokens = engine.encodeChat(messages, { addGenerationPrompt: true }).tokenIds.length;
  if (promptTokens < room) return undefined;
  return {
    result: { text: contextOverflowText, finishReason: "length", promptTokenIds: [], completionTokenIds: [] },
    warning: `context overflow: the prompt has ${promptTokens} tokens, limits.max_model_len ${limit} leaves room for ${room} (AgentJet's max_model_len - max_response_length_in_one_turn); answered with AgentJet's overflow message, not generated and not trained on`,
  };
}
