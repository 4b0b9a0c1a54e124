import type { PlannerKind } from "../domain/planner-kind.ts";
import { heuristicPlannerKind } from "./heuristic/heuristic-kind.ts";
import { llmPlannerKind } from "./llm/llm-kind.ts";

/**
 * The planners `--planner` may name, in the order `--help` lists them. A new planner is a
 * folder of its own with a `<name>-kind.ts` (the `PlannerKind` of domain/planner-kind.ts:
 * its factory, what it needs from the environment and from a topic) and one line below.
 */
const planners = new Map<string, PlannerKind>();

/** `--planner auto`: the ready planner of highest `autoRank`. */
export const autoPlanner = "auto";

/** What a campaign recorded before planners were named (or names one no longer registered) is planned by. */
export const fallbackPlanner = "heuristic";

/** Adds a planner (tests add throwaway ones); the function returned takes it out again. */
export function registerPlanner(kind: PlannerKind): () => void {
  if (kind.name === autoPlanner) throw new Error(`"${autoPlanner}" is --planner's choice among the planners, not a planner's name`);
  if (planners.has(kind.name)) throw new Error(`planner "${kind.name}" is registered twice`);
  planners.set(kind.name, kind);
  return () => {
    if (planners.get(kind.name) === kind) planners.delete(kind.name);
  };
}

registerPlanner(heuristicPlannerKind);
registerPlanner(llmPlannerKind);

export function plannerKinds(): PlannerKind[] {
  return [...planners.values()];
}

export function plannerKindOf(name: string): PlannerKind | undefined {
  return planners.get(name);
}

/** Every value `--planner` takes: the planners, then auto. */
export function plannerFlags(): string[] {
  return [...planners.keys(), autoPlanner];
}
