/**
 * The leader: from a topic to staged experiments, their analysis and a report. Callers
 * (the CLI) use this module only; the folders below it are its parts (see README.md).
 */
export { runLeader } from "./graph/leader-graph.ts";
export { rewriteCampaignReport } from "./report/campaign-report.ts";
export { LlmPlanner } from "./planners/llm/llm-planner.ts";
export type { LeaderRun, ReviewAnswer } from "./graph/leader-graph.ts";
export { choosePlanner, openLeaderModel } from "./planners/planner-choice.ts";
export type { PlannerFlag } from "./planners/planner-choice.ts";
export { loadTopic, parseTopic } from "./domain/topic.ts";
export type { Topic } from "./domain/topic.ts";
export { examplePathRewriter } from "./design/write-blueprints.ts";
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
