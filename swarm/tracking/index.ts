export type { RecordedCall, CompareLevel } from "./recorded-call.ts";
export { mergeTimelines, extendsCall, identicalCalls, type MergeOptions, type Timeline } from "./timeline-merge.ts";
export { buildTrainingSamples, type BuildSamplesOptions, type BuildSamplesStats, type SampleLimits } from "./training-samples.ts";
export { isMad, madnessChecks } from "./madness.ts";
