import type { Engine, TrainingSample } from "../engines/port/engine.ts";
import type { CompareLevel, RecordedCall } from "./recorded-call.ts";
import { startsWith } from "./call-keys.ts";
import { mergeTimelines, type Timeline } from "./timeline-merge.ts";

export interface BuildSamplesOptions {
  compareLevel: CompareLevel;
  /** Merge calls offered different tool lists (MERGE.md); default false. */
  ignoreTools?: boolean;
  taskId: string;
  episodeUuid: string;
  reward: number;
  encodeChat: Engine["encodeChat"];
}

export interface BuildSamplesStats {
  calls: number;
  samples: number;
  /** Tokens if every call were its own sample (prompt + completion each). */
  tokensWithoutMerge: number;
  tokensWithMerge: number;
}

/**
 * Turns the recorded calls of one finished episode into training samples: one per merged
 * timeline, the loss mask 1 exactly on tokens the policy generated (the absorbed calls'
 * completions and the last call's own), with their sampling log-probs kept. A duplicate call
 * (MERGE.md rule 1) adds no tokens: its identical twin already carries them.
 */
export function buildTrainingSamples(calls: RecordedCall[], options: BuildSamplesOptions): { samples: TrainingSample[]; stats: BuildSamplesStats } {
  const timelines = mergeTimelines(calls, { compareLevel: options.compareLevel, ignoreTools: options.ignoreTools ?? false });
  const samples = timelines.map((timeline) => sampleOf(timeline, options));
  let tokensWithoutMerge = 0;
  for (const call of calls) tokensWithoutMerge += call.promptTokenIds.length + call.completionTokenIds.length;
  let tokensWithMerge = 0;
  for (const sample of samples) tokensWithMerge += sample.tokenIds.length;
  return { samples, stats: { calls: calls.length, samples: samples.length, tokensWithoutMerge, tokensWithMerge } };
}

function sampleOf(timeline: Timeline, options: BuildSamplesOptions): TrainingSample {
  const tokenIds: number[] = [];
  const lossMask: number[] = [];
  const logprobs: Array<number | undefined> = [];
  const pushContext = (ids: readonly number[]): void => {
    for (const id of ids) {
      tokenIds.push(id);
      lossMask.push(0);
      logprobs.push(undefined);
    }
  };
  const pushGenerated = (call: RecordedCall): void => {
    call.completionTokenIds.forEach((id, index) => {
      tokenIds.push(id);
      lossMask.push(1);
      logprobs.push(call.completionLogprobs?.[index]);
    });
  };

  let previous: RecordedCall | undefined;
  for (const call of timeline.calls) {
    if (!previous) {
      pushContext(call.promptTokenIds);
    } else if (startsWith(call.promptTokenIds, tokenIds, 0)) {
      // The usual case: the engine re-tokenized the replayed history to the same ids.
      pushContext(call.promptTokenIds.slice(tokenIds.length));
    } else {
      appendByMessageSpans(call, previous, tokenIds, options, pushContext);
    }
    pushGenerated(call);
    previous = call;
  }
  const hasLogprobs = logprobs.some((value) => value !== undefined);
  return {
    taskId: options.taskId,
    episodeUuid: options.episodeUuid,
    tokenIds,
    lossMask,
    ...(hasLogprobs ? { logprobs } : {}),
    reward: options.reward,
  };
}

/**
 * When re-tokenizing the replayed history does not give back the generated ids (a finish by
 * length lacks the end token, or a tokenizer merges across the boundary), the generated
 * tokens stand in for the replayed assistant message and the rest of the prompt follows it.
 */
function appendByMessageSpans(
  call: RecordedCall,
  previous: RecordedCall,
  tokenIds: number[],
  options: BuildSamplesOptions,
  pushContext: (ids: readonly number[]) => void,
): void {
  const encoded = options.encodeChat(call.messages, { addGenerationPrompt: true });
  const replayed = encoded.messageSpans[previous.messages.length];
  const replayEnd = replayed?.end ?? 0;
  if (tokenIds.length < replayEnd && startsWith(encoded.tokenIds, tokenIds, 0)) {
    pushContext(encoded.tokenIds.slice(tokenIds.length, replayEnd));
  }
  pushContext(encoded.tokenIds.slice(replayEnd));
}
