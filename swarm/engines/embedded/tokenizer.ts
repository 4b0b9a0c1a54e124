import type { ChatMessage, ChatRole, EncodedChat } from "../port/engine.ts";

/**
 * A word-level tokenizer over a small fixed output vocabulary.
 *
 * Ids: 0..3 are the role tokens (system, user, assistant, tool), 4 is end-of-turn, then one
 * id per vocabulary word. Words outside the vocabulary still get a stable id (a hash bucket
 * above the vocabulary) so that prompts keep their information, but the policy can never
 * emit them: it samples only end-of-turn and vocabulary words. Text is lower-cased and split
 * into runs of letters/digits and single punctuation marks, so decode(encode(x)) keeps the
 * words but not the spacing or case.
 *
 * A message renders as role token + content tokens + end token, and a conversation is the
 * concatenation of its messages, so a conversation that extends another shares its prefix.
 * The `name` and `tool_call_id` fields of a message are not rendered.
 */
export const roleTokenIds: Record<ChatRole, number> = { system: 0, user: 1, assistant: 2, tool: 3 };
export const endTokenId = 4;
const firstWordId = 5;
const unknownBuckets = 1 << 20;
const wordPattern = /[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu;

export interface WordTokenizer {
  readonly vocabulary: readonly string[];
  /** Ids the policy may emit: end-of-turn then each vocabulary word; index = output index. */
  readonly outputTokenIds: readonly number[];
  encodeText(text: string): number[];
  decode(tokenIds: readonly number[]): string;
  encodeChat(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): EncodedChat;
  /** Output index (0 = end-of-turn) of a token id, or -1 when the policy cannot emit it. */
  outputIndexOf(tokenId: number): number;
  isRoleToken(tokenId: number): boolean;
  roleOf(tokenId: number): ChatRole | undefined;
}

export function splitWords(text: string): string[] {
  return text.toLowerCase().match(wordPattern) ?? [];
}

/** FNV-1a, 32 bit: stable across processes, which the checkpoint format relies on. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * `unknownBuckets`: how many hash ids out-of-vocabulary words share (2^20 here; a3r's tiny
 * Python models use 1024, their config.json's `unknown_buckets`).
 */
export function createWordTokenizer(vocabulary: readonly string[], options: { unknownBuckets?: number } = {}): WordTokenizer {
  const buckets = options.unknownBuckets ?? unknownBuckets;
  const wordIds = new Map<string, number>();
  for (const word of vocabulary) {
    const normalized = splitWords(word);
    if (normalized.length !== 1 || normalized[0] !== word) {
      throw new Error(`vocabulary word "${word}" must be one lower-case word or one punctuation mark`);
    }
    if (!wordIds.has(word)) wordIds.set(word, firstWordId + wordIds.size);
  }
  const words = [...wordIds.keys()];
  const unknownBase = firstWordId + words.length;
  const roleByToken = new Map<number, ChatRole>(Object.entries(roleTokenIds).map(([role, id]) => [id, role as ChatRole]));

  const encodeText = (text: string): number[] => splitWords(text).map((word) => wordIds.get(word) ?? unknownBase + (hashString(word) % buckets));

  return {
    vocabulary: words,
    outputTokenIds: [endTokenId, ...words.map((_, index) => firstWordId + index)],
    encodeText,
    decode(tokenIds) {
      const parts: string[] = [];
      for (const id of tokenIds) {
        if (id === endTokenId || roleByToken.has(id)) continue;
        const word = words[id - firstWordId];
        parts.push(word ?? "<unk>");
      }
      return parts.join(" ");
    },
    encodeChat(messages, options = {}) {
      const tokenIds: number[] = [];
      const messageSpans: Array<{ start: number; end: number }> = [];
      for (const message of messages) {
        const start = tokenIds.length;
        tokenIds.push(roleTokenIds[message.role], ...encodeText(message.content), endTokenId);
        messageSpans.push({ start, end: tokenIds.length });
      }
      if (options.addGenerationPrompt) tokenIds.push(roleTokenIds.assistant);
      return { tokenIds, messageSpans };
    },
    outputIndexOf(tokenId) {
      if (tokenId === endTokenId) return 0;
      const index = tokenId - firstWordId;
      return index >= 0 && index < words.length ? index + 1 : -1;
    },
    isRoleToken: (tokenId) => roleByToken.has(tokenId),
    roleOf: (tokenId) => roleByToken.get(tokenId),
  };
}
