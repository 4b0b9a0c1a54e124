import { describe, expect, it } from "vitest";
import {
  buildTrainingSamples,
  extendsCall,
  identicalCalls,
  mergeTimelines,
  type CompareLevel,
  type MergeOptions,
  type RecordedCall,
  type Timeline,
} from "./index.ts";
import { generatedEpisode, levels, namedCases, recorded, shape, tokenizer } from "./merge-corpus.test-support.ts";

/**
 * The merge corpus: the cases MERGE.md names, then a generated mix of episodes (retries,
 * identical and different answers, branches, stripped whitespace, edited history, outputs
 * replayed in the wrong role, tool and agent changes) checked against the specification:
 * an independent brute-force reading of its three rules, and the properties every result
 * must have.
 */
describe("merge corpus: the cases of MERGE.md", () => {
  for (const testCase of namedCases) {
    for (const compareLevel of levels) {
      it(`${testCase.name} (${compareLevel})`, () => {
        const calls = recorded(testCase.calls);
        expect(shape(mergeTimelines(calls, compareLevel))).toEqual(testCase.expectedAt?.[compareLevel] ?? testCase.expected);
        const withoutToolCheck = shape(mergeTimelines(calls, { compareLevel, ignoreTools: true }));
        expect(withoutToolCheck).toEqual(testCase.expectedAt?.ignoreTools ?? testCase.expectedAt?.[compareLevel] ?? testCase.expected);
        checkProperties(calls, { compareLevel });
      });
    }
  }

  it("a duplicate adds no loss: the sample of 0,1(=0),2 trains x and y once each", () => {
    const calls = recorded(namedCases[0]!.calls);
    const { samples } = buildTrainingSamples(calls, { compareLevel: "token", taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat });
    expect(samples).toHaveLength(1);
    expect(samples[0]!.tokenIds).toEqual([...calls[2]!.promptTokenIds, ...calls[2]!.completionTokenIds]);
    expect(samples[0]!.lossMask.reduce((sum, bit) => sum + bit, 0)).toBe(calls[0]!.completionTokenIds.length + calls[2]!.completionTokenIds.length);
  });
});

// ---- the specification, read by brute force ----------------------------------------------

function replayLength(call: RecordedCall, compareLevel: CompareLevel): number {
  return compareLevel === "text" ? call.messages.length : call.promptTokenIds.length + call.completionTokenIds.length;
}

/** Rules 1-3 of MERGE.md, every pair compared, no fingerprints: timelines as index sets. */
function expectedBySpecification(calls: RecordedCall[], options: MergeOptions): number[][] {
  const representativeOf = new Map<RecordedCall, RecordedCall>();
  const representatives: RecordedCall[] = [];
  for (const call of calls) {
    const twin = representatives.find((candidate) => identicalCalls(call, candidate, options));
    representativeOf.set(call, twin ?? call);
    if (!twin) representatives.push(call);
  }
  const parentOf = new Map<RecordedCall, RecordedCall>();
  for (const call of representatives) {
    let parent: RecordedCall | undefined;
    for (const earlier of representatives) {
      if (!extendsCall(call, earlier, options)) continue;
      const longer = !parent || replayLength(earlier, options.compareLevel) > replayLength(parent, options.compareLevel);
      const asLongButLater =
        parent && replayLength(earlier, options.compareLevel) === replayLength(parent, options.compareLevel) && earlier.callIndex > parent.callIndex;
      if (longer || asLongButLater) parent = earlier;
    }
    if (parent) parentOf.set(call, parent);
  }
  const latestDescendant = new Map<RecordedCall, RecordedCall>(representatives.map((call) => [call, call]));
  for (const call of representatives) {
    for (let ancestor = parentOf.get(call); ancestor; ancestor = parentOf.get(ancestor)) {
      if (latestDescendant.get(ancestor)!.callIndex < call.callIndex) latestDescendant.set(ancestor, call);
    }
  }
  const groups = new Map<RecordedCall, number[]>();
  for (const call of calls) {
    const leaf = latestDescendant.get(representativeOf.get(call)!)!;
    groups.set(leaf, [...(groups.get(leaf) ?? []), call.callIndex]);
  }
  return [...groups.values()].map((group) => group.sort((x, y) => x - y)).sort((x, y) => x[0]! - y[0]!);
}

/** What every merge result must satisfy, whatever the input. */
function checkProperties(calls: RecordedCall[], options: MergeOptions): Timeline[] {
  const timelines = mergeTimelines(calls, options);
  // Every call in exactly one timeline.
  const seen = shape(timelines).flat();
  expect(seen.sort((x, y) => x - y)).toEqual(calls.map((call) => call.callIndex));
  const members = timelines.flatMap((timeline) => timeline.calls);
  for (const timeline of timelines) {
    expect(timeline.calls.length).toBeGreaterThan(0);
    // A prefix chain: each call replays the one before it.
    for (let index = 1; index < timeline.calls.length; index++) {
      expect(extendsCall(timeline.calls[index]!, timeline.calls[index - 1]!, options)).toBe(true);
    }
    // A duplicate has an earlier identical twin in its own timeline.
    for (const duplicate of timeline.duplicates) {
      expect(timeline.calls.some((call) => call.callIndex < duplicate.callIndex && identicalCalls(duplicate, call, options))).toBe(true);
    }
  }
  // Deduplication is complete: no two trained calls are identical.
  for (let i = 0; i < members.length; i++) {
    for (let j = i + 1; j < members.length; j++) expect(identicalCalls(members[i]!, members[j]!, options)).toBe(false);
  }
  // The timelines are exactly those the specification gives.
  expect(shape(timelines)).toEqual(expectedBySpecification(calls, options));

  // Samples: one per timeline, the loss on exactly the trained calls' completions.
  const { samples } = buildTrainingSamples(calls, { ...options, taskId: "t", episodeUuid: "e", reward: 1, encodeChat: tokenizer.encodeChat });
  expect(samples).toHaveLength(timelines.length);
  timelines.forEach((timeline, index) => {
    const sample = samples[index]!;
    const generated = timeline.calls.reduce((sum, call) => sum + call.completionTokenIds.length, 0);
    expect(sample.lossMask.reduce((sum, bit) => sum + bit, 0)).toBe(generated);
    const last = timeline.calls[timeline.calls.length - 1]!;
    if (options.compareLevel === "token") expect(sample.tokenIds).toEqual([...last.promptTokenIds, ...last.completionTokenIds]);
  });
  return timelines;
}

// ---- the generated mix (merge-corpus.test-support.ts) ---------------------------------------

describe("merge corpus: a generated mix checked against the specification", () => {
  const episodes = Array.from({ length: 150 }, (_, seed) => recorded(generatedEpisode(seed + 1, 3 + (seed % 12))));

  for (const compareLevel of levels) {
    for (const ignoreTools of [false, true]) {
      it(`${episodes.length} episodes, ${compareLevel} level${ignoreTools ? ", ignoreTools" : ""}`, () => {
        let duplicates = 0;
        let merged = 0;
        for (const calls of episodes) {
          const timelines = checkProperties(calls, { compareLevel, ignoreTools });
          duplicates += timelines.reduce((sum, timeline) => sum + timeline.duplicates.length, 0);
          merged += calls.length - timelines.length;
        }
        // The mix really exercises the rule: retries were deduplicated and turns merged.
        expect(duplicates).toBeGreaterThan(20);
        expect(merged).toBeGreaterThan(duplicates);
      });
    }
  }

  it("hands calls in any order and gets the same timelines", () => {
    for (const calls of episodes.slice(0, 30)) {
      const shuffled = [...calls].reverse();
      for (const compareLevel of levels) expect(shape(mergeTimelines(shuffled, compareLevel))).toEqual(shape(mergeTimelines(calls, compareLevel)));
    }
  });
});
