import { A3rError } from "../../core/errors.ts";
import type { CampaignPlannerContext, PlannerKind } from "../domain/planner-kind.ts";
import type { Planner } from "../domain/planner.ts";
import type { Topic } from "../domain/topic.ts";
import { autoPlanner, fallbackPlanner, plannerFlags, plannerKindOf, plannerKinds } from "./registry.ts";

export { openLeaderModel, type LeaderModelOptions } from "./llm/leader-model.ts";

/**
 * Which planner a campaign runs with, decided from the `--planner` flag and the
 * environment, by the planners of the registry (planners/registry.ts). `line` is the first
 * line the CLI prints, so a person always sees which planner runs and why, before
 * anything is spent.
 */
export type PlannerFlag = string;

export interface PlannerChoice {
  /** The planner's name, as the campaign records it. */
  planner: string;
  line: string;
}

/**
 * A planner named by the flag is taken as given (one that is not ready here, such as
 * `llm` without a configured model, is a user error saying what to set); `auto` picks
 * the ready planner of highest rank (`llm` when the environment configures a model,
 * `heuristic` otherwise) and says why the ones above it were passed over.
 */
export function choosePlanner(flag: PlannerFlag, env: NodeJS.ProcessEnv): PlannerChoice {
  if (flag !== autoPlanner) {
    const kind = plannerKindOf(flag);
    if (!kind) throw new A3rError("USAGE", `--planner ${flag} names no planner`, { where: "--planner", hint: `--planner is ${describeList(plannerFlags())}` });
    const readiness = kind.readiness?.(env);
    if (readiness && !readiness.ready) throw readiness.refusal(`--planner ${flag}`);
    return { planner: kind.name, line: `planner: ${kind.name} (${readiness ? readiness.detail : `--planner ${kind.name}`})` };
  }
  const passedOver: string[] = [];
  const ranked = plannerKinds()
    .filter((kind): kind is PlannerKind & { autoRank: number } => kind.autoRank !== undefined)
    .sort((left, right) => right.autoRank - left.autoRank);
  for (const kind of ranked) {
    const readiness = kind.readiness?.(env);
    if (readiness && !readiness.ready) {
      passedOver.push(readiness.detail);
      continue;
    }
    const why = readiness?.detail ?? passedOver.join("; ");
    return { planner: kind.name, line: `planner: ${kind.name} (auto${why ? `: ${why}` : ""})` };
  }
  throw new A3rError("USAGE", "--planner auto found no planner that can run here", {
    where: "--planner",
    hint: passedOver.join("; ") || "name a planner with --planner",
  });
}

/** "heuristic, llm or auto". */
export function describeList(names: readonly string[]): string {
  return names.length < 2 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;
}

/** What the topic still lacks for the named planner; empty when it can plan it. */
export function plannerTopicNeeds(planner: string, topic: Topic): string[] {
  return plannerKindOf(planner)?.topicNeeds?.(topic) ?? [];
}

/**
 * The planner of a campaign, from the name its `campaign.created` event recorded (absent
 * or no longer registered: the heuristic one, as before planners were named).
 */
export async function createCampaignPlanner(recorded: string | undefined, context: CampaignPlannerContext): Promise<Planner> {
  const kind = (recorded === undefined ? undefined : plannerKindOf(recorded)) ?? plannerKindOf(fallbackPlanner)!;
  return kind.create(context);
}
