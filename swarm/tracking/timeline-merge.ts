import { sameMessage, sameNumbers, sameTools, startsWith } from "./call-keys.ts";
import { mergeAsAgentJet } from "./agentjet-merge.ts";
import type { MergeOptions, Timeline } from "./merge-types.ts";
import type { CompareLevel, RecordedCall } from "./recorded-call.ts";

export type { MergeOptions, Timeline } from "./merge-types.ts";

type MergeSettings = CompareLevel | MergeOptions;

function settingsOf(settings: MergeSettings): Required<MergeOptions> {
  const defaults = { ignoreTools: false, agentjetCompat: false };
  return typeof settings === "string" ? { compareLevel: settings, ...defaults } : { ...defaults, ...settings };
}

/**
 * Timeline merging: which calls of an episode share one training sample. The rule is
 * written out in MERGE.md beside this file; in short:
 *
 * 1. Identical calls (same agent, tools, messages, prompt and completion tokens) are one
 *    call: the first stands for the others, which join its timeline without a loss of
 *    their own (a retry that got the same answer is not trained twice).
 * 2. A call's parent is the longest earlier call it replays exactly (`extendsCall`).
 * 3. Every call joins the timeline of its latest descendant, so the trajectory the episode
 *    ended on stays whole and an abandoned branch keeps only its own turns.
 *
 * Calls of different agents merge only when the later prompt provably contains the earlier
 * call (the text and the token ids both replay it); calls offered different tool schemas
 * never merge unless `ignoreTools` is set.
 */
export function mergeTimelines(calls: readonly RecordedCall[], settings: MergeSettings): Timeline[] {
  const options = settingsOf(settings);
  const ordered = [...calls].sort((a, b) => a.callIndex - b.callIndex);
  if (options.agentjetCompat) return mergeAsAgentJet(ordered, options);
  const { representatives, duplicatesOf } = groupIdentical(ordered, options);
  const parents = findParents(representatives, options);

  // Latest first: an unclaimed call starts a timeline and takes its ancestors until one is
  // already taken (by a later descendant, whose timeline it then stays in).
  const timelineOf = new Map<RecordedCall, Timeline>();
  const timelines: Timeline[] = [];
  for (let index = representatives.length - 1; index >= 0; index--) {
    let call: RecordedCall | undefined = representatives[index]!;
    if (timelineOf.has(call)) continue;
    const timeline: Timeline = { calls: [], duplicates: [] };
    timelines.push(timeline);
    while (call && !timelineOf.has(call)) {
      timelineOf.set(call, timeline);
      timeline.calls.push(call);
      timeline.duplicates.push(...(duplicatesOf.get(call) ?? []));
      call = parents.get(call);
    }
    timeline.calls.reverse();
    timeline.duplicates.sort((a, b) => a.callIndex - b.callIndex);
  }
  return timelines.sort((a, b) => a.calls[0]!.callIndex - b.calls[0]!.callIndex);
}

/** Whether two calls are the same call made twice: everything that reaches a sample agrees. */
export function identicalCalls(a: RecordedCall, b: RecordedCall, settings: MergeSettings): boolean {
  const options = settingsOf(settings);
  if ((a.agentName ?? "") !== (b.agentName ?? "")) return false;
  if (!options.ignoreTools && !sameTools(a, b)) return false;
  if (a.completionText !== b.completionText || a.messages.length !== b.messages.length) return false;
  if (!sameNumbers(a.promptTokenIds, b.promptTokenIds) || !sameNumbers(a.completionTokenIds, b.completionTokenIds)) return false;
  return a.messages.every((message, index) => sameMessage(message, b.messages[index]!));
}

function groupIdentical(
  ordered: readonly RecordedCall[],
  options: Required<MergeOptions>,
): { representatives: RecordedCall[]; duplicatesOf: Map<RecordedCall, RecordedCall[]> } {
  // Only calls of the same lengths can be identical (a shared bucket costs one exact comparison).
  const byShape = new Map<number, RecordedCall[]>();
  const representatives: RecordedCall[] = [];
  const duplicatesOf = new Map<RecordedCall, RecordedCall[]>();
  for (const call of ordered) {
    const shape = (call.promptTokenIds.length * 4099 + call.completionTokenIds.length) * 257 + call.messages.length;
    const alike = byShape.get(shape) ?? [];
    const first = alike.find((candidate) => identicalCalls(call, candidate, options));
    if (first) {
      duplicatesOf.get(first)!.push(call);
      continue;
    }
    alike.push(call);
    byShape.set(shape, alike);
    representatives.push(call);
    duplicatesOf.set(call, []);
  }
  return { representatives, duplicatesOf };
}

/** Messages (text) or tokens (token) a call and its output take up in a replaying prompt. */
function replayLength(call: RecordedCall, compareLevel: CompareLevel): number {
  return compareLevel === "text" ? call.messages.length : call.promptTokenIds.length + call.completionTokenIds.length;
}

/**
 * Each call's parent: the longest earlier call it extends (the latest among equals).
 * A cheap look at the boundary (the replayed output) picks the candidates; only those are
 * compared in full, longest first, and the first that passes is the parent, so a plain
 * multi-turn episode costs one full comparison per call.
 */
function findParents(representatives: readonly RecordedCall[], options: Required<MergeOptions>): Map<RecordedCall, RecordedCall> {
  const parents = new Map<RecordedCall, RecordedCall>();
  const trimmedOutputs = new Map<RecordedCall, string>();
  const trimmedOutput = (call: RecordedCall): string => {
    let text = trimmedOutputs.get(call);
    if (text === undefined) {
      text = call.completionText.trim();
      trimmedOutputs.set(call, text);
    }
    return text;
  };
  for (let index = 1; index < representatives.length; index++) {
    const call = representatives[index]!;
    const candidates: RecordedCall[] = [];
    for (let earlierIndex = 0; earlierIndex < index; earlierIndex++) {
      const earlier = representatives[earlierIndex]!;
      if (mayReplay(call, earlier, options.compareLevel, trimmedOutput)) candidates.push(earlier);
    }
    candidates.sort((a, b) => replayLength(b, options.compareLevel) - replayLength(a, options.compareLevel) || b.callIndex - a.callIndex);
    const parent = candidates.find((earlier) => extendsCall(call, earlier, options));
    if (parent) parents.set(call, parent);
  }
  return parents;
}

/** A necessary condition of `extendsCall`, checked at the boundary only. */
function mayReplay(later: RecordedCall, earlier: RecordedCall, compareLevel: CompareLevel, trimmedOutput: (call: RecordedCall) => string): boolean {
  if (compareLevel === "token" && (later.agentName ?? "") === (earlier.agentName ?? "")) {
    return startsWith(later.promptTokenIds, earlier.completionTokenIds, earlier.promptTokenIds.length);
  }
  const replayed = later.messages[earlier.messages.length];
  return replayed !== undefined && replayed.role === "assistant" && replayed.content.trim() === trimmedOutput(earlier);
}

/**
 * Whether `later` replays `earlier` (its conversation plus its output) as its own prefix,
 * so that one sample can carry both: the check the whole rule rests on.
 */
export function extendsCall(later: RecordedCall, earlier: RecordedCall, settings: MergeSettings): boolean {
  const options = settingsOf(settings);
  if (later.callIndex <= earlier.callIndex) return false;
  // Chat templates render tool schemas into the prompt: other tools, another prompt.
  if (!options.ignoreTools && !sameTools(later, earlier)) return false;
  if ((later.agentName ?? "") !== (earlier.agentName ?? "")) {
    // Another agent's call is merged only where this prompt really is its context.
    return replaysText(later, earlier) && replaysTokens(later, earlier);
  }
  return options.compareLevel === "token" ? replaysTokens(later, earlier) : replaysText(later, earlier);
}

function replaysTokens(later: RecordedCall, earlier: RecordedCall): boolean {
  return (
    later.promptTokenIds.length >= earlier.promptTokenIds.length + earlier.completionTokenIds.length &&
    startsWith(later.promptTokenIds, earlier.promptTokenIds, 0) &&
    startsWith(later.promptTokenIds, earlier.completionTokenIds, earlier.promptTokenIds.length)
  );
}

function replaysText(later: RecordedCall, earlier: RecordedCall): boolean {
  const count = earlier.messages.length;
  if (later.messages.length <= count) return false;
  for (let index = 0; index < count; index++) {
    if (!sameMessage(later.messages[index]!, earlier.messages[index]!)) return false;
  }
  const replayed = later.messages[count]!;
  // Role-checked: the policy's output must come back as an assistant message, never as a
  // user or tool message that happens to carry the same words. Clients commonly strip
  // surrounding whitespace from what the model said before replaying it.
  return replayed.role === "assistant" && replayed.content.trim() === earlier.completionText.trim();
}
