import { endTokenId, roleTokenIds, type WordTokenizer } from "./tokenizer.ts";

/**
 * What the policy sees when it picks the next token: hashed features of the conversation.
 *
 * The model is log-linear: the logit of each output word is the sum, over the active
 * features, of one weight row per feature (a hashed table of `2^featureBits` rows) times the
 * feature's scale. The main feature is the visible context of the turn (the first 16 words of
 * the system prompt, the last 16 of the last user/tool message, the last 4 of the previous
 * assistant message) crossed with the position in the
 * answer and the previous token: in effect a lookup table per distinct prompt. Word-level
 * features (each word of the last user message and of the previous assistant message) and a
 * shared "previous token" feature let it generalize a little, at a smaller scale so that they
 * cannot drag every prompt to the same answer (GRPO gets no signal from groups that are all
 * wrong, so a shared feature that grows unchecked collapses the policy). The model cannot
 * count, copy arbitrary words, or combine two words it has not seen together.
 */
const maxUserWords = 16;
const maxAssistantWords = 4;
const maxSystemWords = 16;
const positionBuckets = 4;
const wordFeatureScale = 0.05;
const sharedFeatureScale = 0.5;

const kindContext = 1,
  kindUser = 2,
  kindAssistant = 4,
  kindPrevious = 7;

function mix(a: number, b: number, c = 0): number {
  let hash = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13) ^ b, 0xc2b2ae35);
  hash = Math.imul(hash ^ (hash >>> 16) ^ c, 0x27d4eb2f);
  return (hash ^ (hash >>> 15)) >>> 0;
}

/** Active features of one position: table rows and the scale each contributes with. */
export interface ActiveFeatures {
  rows: number[];
  scales: number[];
}

interface MessageSlice {
  role: number;
  start: number;
  end: number;
}

/**
 * Keys of the features fixed for a whole assistant turn (they do not depend on position):
 * the context key first, then the word keys.
 */
export function turnFeatureKeys(tokens: readonly number[], messages: readonly MessageSlice[], tokenizer: WordTokenizer): number[] {
  const isAnswerContext = (role: number): boolean => role === roleTokenIds.user || role === roleTokenIds.tool;
  let userIndex = -1;
  for (let index = messages.length - 1; index >= 0; index--) {
    if (isAnswerContext(messages[index]!.role)) {
      userIndex = index;
      break;
    }
  }
  let assistantIndex = -1;
  for (let index = userIndex - 1; index >= 0; index--) {
    if (messages[index]!.role === roleTokenIds.assistant) {
      assistantIndex = index;
      break;
    }
  }
  const systemIndex = messages.findIndex((message) => message.role === roleTokenIds.system);
  const contentOf = (index: number, limit: number, fromEnd: boolean): number[] => {
    if (index < 0) return [];
    const { start, end } = messages[index]!;
    const words = tokens.slice(start + 1, end).filter((id) => !tokenizer.isRoleToken(id) && id !== endTokenId);
    return fromEnd ? words.slice(-limit) : words.slice(0, limit);
  };
  const user = contentOf(userIndex, maxUserWords, true);
  const assistant = contentOf(assistantIndex, maxAssistantWords, true);
  const system = contentOf(systemIndex, maxSystemWords, false);
  let context = mix(kindContext, user.length, assistant.length);
  for (const word of [...system, ...user, ...assistant]) context = mix(context, word);
  const keys = [context];
  for (const word of user) keys.push(mix(kindUser, word));
  for (const word of assistant) keys.push(mix(kindAssistant, word));
  return keys;
}

/** Features active when generating answer position `position` after token `previous`. */
export function activeFeatures(turnKeys: readonly number[], previous: number, position: number, featureBits: number): ActiveFeatures {
  const bucket = Math.min(position, positionBuckets - 1);
  const mask = (1 << featureBits) - 1;
  const context = turnKeys[0]!;
  const rows = [mix(context, bucket, previous) & mask, mix(context, bucket, -1) & mask, mix(mix(kindPrevious, previous), bucket, 1) & mask];
  const scales = [1, 1, sharedFeatureScale];
  for (let index = 1; index < turnKeys.length; index++) {
    rows.push(mix(turnKeys[index]!, bucket, 1) & mask);
    scales.push(wordFeatureScale);
  }
  return { rows, scales };
}

/**
 * Walks a rendered conversation and calls `visit` for every token inside an assistant turn,
 * with the features the policy had when it produced that token. Used by training on merged
 * samples, where several assistant turns share one token sequence.
 */
export function forEachAssistantToken(
  tokens: readonly number[],
  tokenizer: WordTokenizer,
  visit: (index: number, turnKeys: readonly number[], position: number) => void,
): void {
  const messages: MessageSlice[] = [];
  let open: MessageSlice | undefined;
  let turnKeys: number[] | undefined;
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (open?.role === roleTokenIds.assistant && turnKeys) visit(index, turnKeys, index - open.start - 1);
    if (tokenizer.isRoleToken(token)) {
      if (open) messages.push({ ...open, end: index });
      open = { role: token, start: index, end: index };
      turnKeys = token === roleTokenIds.assistant ? turnFeatureKeys(tokens, messages, tokenizer) : undefined;
    } else if (token === endTokenId && open) {
      messages.push({ ...open, end: index + 1 });
      open = undefined;
      turnKeys = undefined;
    }
  }
}

/** The features of the turn a generation prompt (ending in the assistant role token) opens. */
export function promptTurnKeys(promptTokens: readonly number[], tokenizer: WordTokenizer): number[] {
  let keys: number[] = [];
  forEachAssistantToken([...promptTokens, endTokenId], tokenizer, (index, turnKeys) => {
    if (index === promptTokens.length) keys = [...turnKeys];
  });
  return keys;
}

/** logits[o] = sum over active features of scale * weight[row][o]. */
export function computeLogits(weights: Float32Array, features: ActiveFeatures, outputSize: number, logits: Float64Array): void {
  logits.fill(0);
  features.rows.forEach((row, index) => {
    const scale = features.scales[index]!;
    const offset = row * outputSize;
    for (let output = 0; output < outputSize; output++) logits[output]! += scale * weights[offset + output]!;
  });
}

/** In-place log-softmax; returns nothing, `logits` then holds log-probabilities. */
export function logSoftmax(logits: Float64Array): void {
  let max = -Infinity;
  for (const value of logits) if (value > max) max = value;
  let sum = 0;
  for (const value of logits) sum += Math.exp(value - max);
  const logSum = max + Math.log(sum);
  for (let index = 0; index < logits.length; index++) logits[index]! -= logSum;
}
