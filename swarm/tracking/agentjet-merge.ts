import { sameNumbers, sameTools, startsWith } from "./call-keys.ts";
import type { MergeOptions, Timeline } from "./merge-types.ts";
import type { RecordedCall } from "./recorded-call.ts";

/**
 * AgentJet's timeline-merging rule, for `agentjet_compat: true` (MERGE.md lists where it
 * differs from a3r's). Each call is read as AgentJet sees it: its messages followed by
 * its output as one more message. Latest call first, every call not yet absorbed absorbs
 * each earlier one whose sequence is a prefix of its own:
 *
 * - text level: message contents equal one by one (the role, the agent and the other
 *   fields are not compared; whitespace counts), the earlier output equal to the content at
 *   its place;
 * - token level: the earlier call's prompt and completion tokens are a prefix of the later
 *   call's (the whole of it when both have as many messages);
 * - the tool lists equal, unless `ignoreTools`.
 *
 * Calls absorbed by one call form its timeline; of those with as many messages (identical
 * for AgentJet) the latest is trained and the others are its duplicates, as AgentJet keeps
 * the absorbing (later) call.
 */
export function mergeAsAgentJet(ordered: readonly RecordedCall[], options: Required<MergeOptions>): Timeline[] {
  const absorbed = new Set<RecordedCall>();
  const timelines: Timeline[] = [];
  for (let index = ordered.length - 1; index >= 0; index--) {
    const source = ordered[index]!;
    if (absorbed.has(source)) continue;
    const members = [source];
    for (let earlierIndex = index - 1; earlierIndex >= 0; earlierIndex--) {
      const target = ordered[earlierIndex]!;
      if (absorbed.has(target) || !absorbs(source, target, options)) continue;
      absorbed.add(target);
      members.push(target);
    }
    timelines.push(timelineOf(members));
  }
  return timelines.sort((a, b) => firstIndex(a) - firstIndex(b));
}

function firstIndex(timeline: Timeline): number {
  return Math.min(...[...timeline.calls, ...timeline.duplicates].map((call) => call.callIndex));
}

/** Members latest first: the latest of each message count is trained, the rest are its duplicates. */
function timelineOf(members: readonly RecordedCall[]): Timeline {
  const trained = new Map<number, RecordedCall>();
  const duplicates: RecordedCall[] = [];
  for (const call of members) {
    if (trained.has(call.messages.length)) duplicates.push(call);
    else trained.set(call.messages.length, call);
  }
  return {
    calls: [...trained.values()].sort((a, b) => a.callIndex - b.callIndex),
    duplicates: duplicates.sort((a, b) => a.callIndex - b.callIndex),
  };
}

/** Whether AgentJet merges `target` (earlier) into `source` (later). */
export function absorbs(source: RecordedCall, target: RecordedCall, options: Pick<Required<MergeOptions>, "compareLevel" | "ignoreTools">): boolean {
  const count = target.messages.length;
  if (source.messages.length < count) return false;
  if (!options.ignoreTools && !sameTools(source, target)) return false;
  if (options.compareLevel === "token") {
    if (source.messages.length === count)
      return sameNumbers(source.promptTokenIds, target.promptTokenIds) && sameNumbers(source.completionTokenIds, target.completionTokenIds);
    return (
      startsWith(source.promptTokenIds, target.promptTokenIds, 0) && startsWith(source.promptTokenIds, target.completionTokenIds, target.promptTokenIds.length)
    );
  }
  for (let index = 0; index < count; index++) {
    if (source.messages[index]!.content !== target.messages[index]!.content) return false;
  }
  const atOutput = source.messages.length === count ? source.completionText : source.messages[count]!.content;
  return atOutput === target.completionText;
}
