import { readEvents } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { choosePlanner, createCampaignPlanner, type Planner, type PlannerFlag, type Topic } from "../../leader/index.ts";

/**
 * Which planner a campaign uses is decided once, when it is created: the choice goes into
 * its `campaign.created` event, so a resumed campaign keeps its planner (a campaign
 * planned by a model is never finished by the heuristic one because a key went missing).
 * The planners themselves are the leader's plug-ins (leader/planners/registry.ts).
 */
export function plannerChoiceFacts(flag: PlannerFlag, env: NodeJS.ProcessEnv): { planner: string; plannerWhy: string } {
  const choice = choosePlanner(flag, env);
  return { planner: choice.planner, plannerWhy: choice.line };
}

/**
 * The campaign's planner, made by the planner its `campaign.created` event names. With
 * `willRun` (the leader is going to move: a new campaign, a review answer, a resume that
 * is not just a look at a paused or finished campaign) a planner that cannot run here
 * (the llm one without a model) is refused before anything is recorded; otherwise the
 * model is opened at its first call, so looking at a campaign needs no key.
 */
export async function plannerOfCampaign(paths: CampaignPaths, topic: Topic, env: NodeJS.ProcessEnv, willRun: boolean): Promise<Planner> {
  const { events } = await readEvents(paths.events);
  const created = events.find((event) => event.kind === "campaign.created");
  return createCampaignPlanner(typeof created?.planner === "string" ? created.planner : undefined, {
    campaignId: paths.id,
    topic,
    topicFile: paths.topic,
    eventsFile: paths.events,
    ledgerFile: paths.ledger,
    env,
    willRun,
  });
}
