/**
 * The leader: from a topic to staged experiments, their analysis and a report. Callers
 * (the CLI) use this module only; the folders below it are its parts (see README.md).
 */
import type { LeaderOptions, LeaderRun, ReviewAnswer } from "./graph/leader-graph.ts";
import type { LlmPlannerOptions } from "./planners/llm/llm-planner.ts";

export type { LeaderRun, ReviewAnswer } from "./graph/leader-graph.ts";
export { rewriteCampaignReport } from "./report/campaign-report.ts";
export { writeCampaignWriteup } from "./report/writeup.ts";

// LangGraph, SQLite and the model SDKs cost about 1.5 s to load: `a3r status` and
// `a3r report` never pay for them; only the commands that run the graph or a model do.

/** Runs, resumes, answers or re-opens a campaign (graph/leader-graph.ts). */
export async function runLeader(options: LeaderOptions & { answer?: ReviewAnswer; reopen?: boolean }): Promise<LeaderRun> {
  return (await import("./graph/leader-graph.ts")).runLeader(options);
}

/** The language-model planner (planners/llm). */
export async function createLlmPlanner(options: LlmPlannerOptions): Promise<import("./domain/planner.ts").Planner> {
  const { LlmPlanner } = await import("./planners/llm/llm-planner.ts");
  return new LlmPlanner(options);
}
export { choosePlanner, createCampaignPlanner, describeList, openLeaderModel, plannerTopicNeeds } from "./planners/planner-choice.ts";
export type { PlannerChoice, PlannerFlag } from "./planners/planner-choice.ts";
// Planners are plug-ins: planners/registry.ts lists them, one line each (README.md, "Planners").
export { plannerFlags, plannerKindOf, plannerKinds, registerPlanner } from "./planners/registry.ts";
export type { CampaignPlannerContext, PlannerKind, PlannerReadiness } from "./domain/planner-kind.ts";
export { heuristicNeeds, loadTopic, parseTopic } from "./domain/topic.ts";
export { measuredTopic } from "./design/measurement-protocol.ts";
export type { Topic } from "./domain/topic.ts";
export { topicTextWithAbsolutePaths } from "./domain/topic-paths.ts";
export { draftTopic, parseKnobFlag, proposeKnobs } from "./domain/topic-draft.ts";
export type { KnobProposal, TopicDraft } from "./domain/topic-draft.ts";
export { setLeaderCheckpointAside } from "./record/rebuild-checkpoint.ts";
export { formatNumber } from "./domain/configurations.ts";
export { reviewAnswerEvent } from "./graph/graph-steps.ts";
export { eventsOfCurrentRound } from "./record/reopen.ts";
export { HeuristicPlanner } from "./planners/heuristic/heuristic-planner.ts";
export type {
  BlueprintText,
  BlueprintWritingInput,
  Conclusion,
  ConclusionInput,
  FramedQuestion,
  Planner,
  PlannerInput,
  PlannerStep,
} from "./domain/planner.ts";
export { buildResultsIndex } from "./history/results-index.ts";
export type { IndexedCampaign, IndexedRun, ResultsIndex } from "./history/results-index.ts";
