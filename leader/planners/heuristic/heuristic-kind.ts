import type { PlannerKind } from "../../domain/planner-kind.ts";
import { heuristicNeeds } from "../../domain/topic.ts";
import { HeuristicPlanner } from "./heuristic-planner.ts";

/** `--planner heuristic`: deterministic, needs no model; `auto` falls back to it. */
export const heuristicPlannerKind: PlannerKind = {
  name: "heuristic",
  description: "heuristic",
  autoRank: 1,
  topicNeeds: heuristicNeeds,
  create: () => new HeuristicPlanner(),
};
