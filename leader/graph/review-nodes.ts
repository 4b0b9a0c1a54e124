import type { NodeContext } from "./node-context.ts";
import type { LeaderStateValue } from "./leader-state.ts";

/** Review: the two pauses for a person (after the plan, after the blueprints). Wiring: leader-graph.ts. */

export function approvePlanNode(context: NodeContext) {
  const { paths, enter, review } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("approve_plan", state);
    return review(state, "plan", [paths.stage(state.stagePlan!.stage).plan]);
  };
}

export function approveBlueprintsNode(context: NodeContext) {
  const { enter, review } = context;
  return async (state: LeaderStateValue): Promise<Partial<LeaderStateValue>> => {
    await enter("approve_blueprints", state);
    return review(state, "blueprints", state.blueprintFiles);
  };
}
