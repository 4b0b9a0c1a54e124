import type { ChatMessage } from "../engines/engine.ts";
import type { CompareLevel, RecordedCall } from "./recorded-call.ts";

/**
 * Timeline merging: which calls of an episode can share one training sample.
 *
 * A later call absorbs an earlier one when it replays it exactly: its messages start with
 * all of the earlier call's messages followed by the earlier call's output as an assistant
 * message (`text`), or its prompt tokens start with the earlier prompt and completion
 * (`token`). Each call is absorbed at most once and absorbs at most one call, so the result
 * is a set of chains; a branch (two calls extending the same one) keeps the first as the
 * chain and leaves the other as its own timeline. Calls of different agents never merge, nor
 * (at `text` level) calls offered different tool schemas.
 */
export interface Timeline {
  /** Calls in conversation order; the last one is the surviving (longest) timeline. */
  calls: RecordedCall[];
}

export function mergeTimelines(calls: readonly RecordedCall[], compareLevel: CompareLevel): Timeline[] {
  const ordered = [...calls].sort((a, b) => a.callIndex - b.callIndex);
  const chains: Timeline[] = [];
  for (const call of ordered) {
    let best: Timeline | undefined;
    for (const chain of chains) {
      const head = chain.calls[chain.calls.length - 1]!;
      if (!extendsCall(call, head, compareLevel)) continue;
      if (!best || lengthOf(head, compareLevel) > lengthOf(best.calls[best.calls.length - 1]!, compareLevel)) best = chain;
    }
    if (best) best.calls.push(call);
    else chains.push({ calls: [call] });
  }
  return chains;
}

function lengthOf(call: RecordedCall, compareLevel: CompareLevel): number {
  return compareLevel === "text" ? call.messages.length : call.promptTokenIds.length;
}

/** Whether `later` replays `earlier` (its conversation plus its output) as its own prefix. */
export function extendsCall(later: RecordedCall, earlier: RecordedCall, compareLevel: CompareLevel): boolean {
  if (later.callIndex === earlier.callIndex) return false;
  if ((later.agentName ?? "") !== (earlier.agentName ?? "")) return false;
  if (compareLevel === "token") {
    const prefixLength = earlier.promptTokenIds.length + earlier.completionTokenIds.length;
    if (later.promptTokenIds.length < prefixLength) return false;
    return (
      startsWith(later.promptTokenIds, earlier.promptTokenIds, 0) && startsWith(later.promptTokenIds, earlier.completionTokenIds, earlier.promptTokenIds.length)
    );
  }
  // Real chat templates render tool schemas into the prompt: other tools, other prompt.
  if (JSON.stringify(later.tools ?? []) !== JSON.stringify(earlier.tools ?? [])) return false;
  const count = earlier.messages.length;
  if (later.messages.length <= count) return false;
  for (let index = 0; index < count; index++) {
    if (!sameMessage(later.messages[index]!, earlier.messages[index]!)) return false;
  }
  const replayed = later.messages[count]!;
  // Clients commonly strip surrounding whitespace from what the model said before replaying it.
  return replayed.role === "assistant" && replayed.content.trim() === earlier.completionText.trim();
}

function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  return a.role === b.role && a.content === b.content;
}

export function startsWith(haystack: readonly number[], needle: readonly number[], offset: number): boolean {
  if (haystack.length < offset + needle.length) return false;
  for (let index = 0; index < needle.length; index++) {
    if (haystack[offset + index] !== needle[index]) return false;
  }
  return true;
}
