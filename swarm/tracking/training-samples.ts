import type { Engine, TrainingSample } from "../engines/port/engine.ts";
import type { CompareLevel, RecordedCall } from "./recorded-call.ts";
import { startsWith } from "./call-keys.ts";
import { isMad } from "./madness.ts";
import { mergeTimelines, type Timeline } from "./timeline-merge.ts";

export interface BuildSamplesOptions {
  compareLevel: CompareLevel;
  /** Merge calls offered different tool lists (MERGE.md); default false. */
  ignoreTools?: boolean;
  /** AgentJet's merge rule exactly (MERGE.md, `agentjet_compat`). */
  agentjetCompat?: boolean;
  /** AgentJet's per-episode caps and madness reward; none by default. */
  limits?: SampleLimits;
  taskId: string;
  episodeUuid: string;
  reward: number;
  encodeChat: Engine["encodeChat"];
}

/**
 * What AgentJet does to an episode's samples after merging (its `ajet.data.*` and
 * `ajet.rollout.*` keys, mapped by swarm/config/agentjet.ts), each only when set.
 */
export interface SampleLimits {
  /** `multi_turn.max_sample_per_task`: more timelines than this keep a random subset of this many (as AgentJet). */
  maxSamples?: number;
  /** `data.max_prompt_length`: the context before the first trained token is counted up to this many tokens... */
  maxPromptTokens?: number;
  /** ...and `data.max_response_length` tokens after that are kept: a longer sample is cut (AgentJet truncates, and warns). */
  maxResponseTokens?: number;
  /** `compute_madness_checklist` / `agent_madness_reward` / `agent_madness_termination`. */
  madness?: { checklist: readonly string[]; reward: number; terminate: boolean };
}

export interface BuildSamplesStats {
  calls: number;
  samples: number;
  /** Timelines left out by `maxSamples`. */
  droppedSamples: number;
  /** Samples cut to the prompt and response limits. */
  truncatedSamples: number;
  /** A completion was mad: every sample carries the madness reward. */
  mad: boolean;
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
  const limits = options.limits ?? {};
  const { tracked, mad } = trackedCalls(calls, limits.madness);
  const reward = mad ? limits.madness!.reward : options.reward;
  const timelines = mergeTimelines(tracked, {
    compareLevel: options.compareLevel,
    ignoreTools: options.ignoreTools ?? false,
    agentjetCompat: options.agentjetCompat ?? false,
  });
  const kept = limits.maxSamples !== undefined && timelines.length > limits.maxSamples ? randomSubset(timelines, limits.maxSamples) : timelines;
  let truncatedSamples = 0;
  const samples = kept.flatMap((timeline) =>
    samplesBySampling(sampleOf(timeline, { ...options, reward })).map((sample) => {
      const cut = truncated(sample, limits);
      if (cut !== sample) truncatedSamples += 1;
      return cut;
    }),
  );
  let tokensWithoutMerge = 0;
  for (const call of calls) tokensWithoutMerge += call.promptTokenIds.length + call.completionTokenIds.length;
  let tokensWithMerge = 0;
  for (const sample of samples) tokensWithMerge += sample.tokenIds.length;
  const droppedSamples = timelines.length - kept.length;
  return { samples, stats: { calls: calls.length, samples: samples.length, droppedSamples, truncatedSamples, mad, tokensWithoutMerge, tokensWithMerge } };
}

/** The calls AgentJet would have tracked: with termination on, none after the first mad one. */
function trackedCalls(calls: RecordedCall[], madness: SampleLimits["madness"]): { tracked: RecordedCall[]; mad: boolean } {
  if (!madness || madness.checklist.length === 0) return { tracked: calls, mad: false };
  const ordered = [...calls].sort((a, b) => a.callIndex - b.callIndex);
  const first = ordered.findIndex((call) => isMad(call.completionText, madness.checklist, (call.tools?.length ?? 0) > 0));
  if (first < 0) return { tracked: calls, mad: false };
  return { tracked: madness.terminate ? ordered.slice(0, first + 1) : calls, mad: true };
}

/** `count` of the timelines chosen at random, in their order (AgentJet samples at random too). */
function randomSubset(timelines: Timeline[], count: number): Timeline[] {
  const indices = timelines.map((_, index) => index);
  for (let index = indices.length - 1; index > 0; index--) {
    const other = Math.floor(Math.random() * (index + 1));
    [indices[index], indices[other]] = [indices[other]!, indices[index]!];
  }
  const chosen = new Set(indices.slice(0, count));
  return timelines.filter((_, index) => chosen.has(index));
}

/** The sample cut as AgentJet cuts it: its prompt counted up to maxPromptTokens, then maxResponseTokens kept. */
function truncated(sample: TrainingSample, limits: SampleLimits): TrainingSample {
  if (limits.maxPromptTokens === undefined && limits.maxResponseTokens === undefined) return sample;
  const firstTrained = sample.lossMask.indexOf(1);
  const split = Math.min(firstTrained < 0 ? sample.tokenIds.length : firstTrained, limits.maxPromptTokens ?? Number.POSITIVE_INFINITY);
  const keep = split + (limits.maxResponseTokens ?? Number.POSITIVE_INFINITY);
  if (sample.tokenIds.length <= keep) return sample;
  return {
    ...sample,
    tokenIds: sample.tokenIds.slice(0, keep),
    lossMask: sample.lossMask.slice(0, keep),
    ...(sample.logprobs ? { logprobs: sample.logprobs.slice(0, keep) } : {}),
  };
}

/** A timeline's sample, and which call generated each of its trained tokens. */
interface BuiltSample {
  sample: TrainingSample;
  generatedBy: Array<RecordedCall | undefined>;
}

/**
 * The trainer weighs a sample's tokens at one temperature and top_p: a timeline whose calls
 * were sampled alike carries theirs; one whose calls differ (a client choosing per turn with
 * `train_sampling: client`) becomes one sample per sampling, the same tokens with only that
 * sampling's generated tokens trained (the others are context).
 */
function samplesBySampling({ sample, generatedBy }: BuiltSample): TrainingSample[] {
  const groups = new Map<string, { temperature: number; topP: number }>();
  for (const call of generatedBy) if (call?.sampling) groups.set(samplingKey(call.sampling), call.sampling);
  if (groups.size === 0) return [sample];
  if (groups.size === 1) {
    const [only] = groups.values();
    return [{ ...sample, temperature: only!.temperature, topP: only!.topP }];
  }
  return [...groups].map(([key, sampling]) => ({
    ...sample,
    lossMask: sample.lossMask.map((flag, index) => (flag === 1 && generatedBy[index]?.sampling && samplingKey(generatedBy[index].sampling) === key ? 1 : 0)),
    temperature: sampling.temperature,
    topP: sampling.topP,
  }));
}

function samplingKey(sampling: { temperature: number; topP: number }): string {
  return `${sampling.temperature}/${sampling.topP}`;
}

function sampleOf(timeline: Timeline, options: BuildSamplesOptions): BuiltSample {
  const tokenIds: number[] = [];
  const lossMask: number[] = [];
  const logprobs: Array<number | undefined> = [];
  const generatedBy: Array<RecordedCall | undefined> = [];
  const pushContext = (ids: readonly number[]): void => {
    for (const id of ids) {
      tokenIds.push(id);
      lossMask.push(0);
      logprobs.push(undefined);
      generatedBy.push(undefined);
    }
  };
  const pushGenerated = (call: RecordedCall): void => {
    call.completionTokenIds.forEach((id, index) => {
      tokenIds.push(id);
      lossMask.push(1);
      logprobs.push(call.completionLogprobs?.[index]);
      generatedBy.push(call);
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
  const sample = {
    taskId: options.taskId,
    episodeUuid: options.episodeUuid,
    tokenIds,
    lossMask,
    ...(hasLogprobs ? { logprobs } : {}),
    reward: options.reward,
  };
  return { sample, generatedBy };
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
