import { appendEventOnce, readEvents } from "../campaign/index.ts";
import type { CampaignPaths } from "../campaign/index.ts";
import { A3rError } from "../core/errors.ts";
import { HeuristicPlanner } from "./heuristic-planner.ts";
import type { Planner } from "./planner.ts";
import { choosePlanner, openLeaderModel } from "./planner-choice.ts";
import type { PlannerFlag } from "./planner-choice.ts";
import type { Topic } from "./topic.ts";

/**
 * Which planner a campaign uses is decided once, when it is created (`leader.configured`
 * in events.jsonl), so a resumed campaign keeps its planner: a campaign planned by a model
 * is never finished by the heuristic one because a key went missing.
 */
export async function recordPlannerChoice(paths: CampaignPaths, flag: PlannerFlag, env: NodeJS.ProcessEnv): Promise<string> {
  const choice = choosePlanner(flag, env);
  await appendEventOnce(paths.events, "leader.configured", {}, { planner: choice.planner, why: choice.line });
  return choice.line;
}

export async function plannerOfCampaign(paths: CampaignPaths, topic: Topic, env: NodeJS.ProcessEnv): Promise<Planner> {
  const { events } = await readEvents(paths.events);
  const configured = events.find((event) => event.kind === "leader.configured");
  if (configured?.planner !== "llm") return new HeuristicPlanner();
  if (choosePlanner("auto", env).planner !== "llm") {
    throw new A3rError("LLM_CONFIG_INVALID", `campaign ${paths.id} is planned by a language model, and none is configured now`, {
      where: paths.events,
      hint: "set the same model as when it started (ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL), then resume again",
    });
  }
  const model = await openLeaderModel(env, { ledgerFile: paths.ledger, budget: { tokens: topic.budgets.llmTokens, usd: topic.budgets.llmUsd } });
  // Loaded only here: the model planner's prompts and schemas are not needed by a heuristic campaign.
  const { LlmPlanner } = await import("./llm-planner.ts");
  return new LlmPlanner({ model });
}
