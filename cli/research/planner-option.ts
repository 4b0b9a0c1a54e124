import { readEvents } from "../../campaign/index.ts";
import type { CampaignPaths } from "../../campaign/index.ts";
import { A3rError } from "../../core/errors.ts";
import {
  HeuristicPlanner,
  createLlmPlanner,
  choosePlanner,
  openLeaderModel,
  type BlueprintText,
  type BlueprintWritingInput,
  type Conclusion,
  type ConclusionInput,
  type FramedQuestion,
  type Planner,
  type PlannerFlag,
  type PlannerInput,
  type PlannerStep,
  type Topic,
} from "../../leader/index.ts";

/**
 * Which planner a campaign uses is decided once, when it is created: the choice goes into
 * its `campaign.created` event, so a resumed campaign keeps its planner (a campaign
 * planned by a model is never finished by the heuristic one because a key went missing).
 */
export function plannerChoiceFacts(flag: PlannerFlag, env: NodeJS.ProcessEnv): { planner: "heuristic" | "llm"; plannerWhy: string } {
  const choice = choosePlanner(flag, env);
  return { planner: choice.planner, plannerWhy: choice.line };
}

/**
 * The campaign's planner. With `willRun` (the leader is going to move: a new campaign, a
 * review answer, a resume that is not just a look at a paused or finished campaign) a
 * missing model is refused here, before anything is recorded; otherwise the model is
 * opened at its first call, so looking at a campaign needs no key.
 */
export async function plannerOfCampaign(paths: CampaignPaths, topic: Topic, env: NodeJS.ProcessEnv, willRun: boolean): Promise<Planner> {
  const { events } = await readEvents(paths.events);
  const created = events.find((event) => event.kind === "campaign.created");
  if (created?.planner !== "llm") return new HeuristicPlanner();
  const requireModel = () => {
    if (choosePlanner("auto", env).planner === "llm") return;
    throw new A3rError("LLM_CONFIG_INVALID", `campaign ${paths.id} is planned by a language model, and none is configured now`, {
      where: paths.events,
      hint: "set the same model as when it started (ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL), then resume again",
    });
  };
  if (willRun) requireModel();
  return new PlannerOpenedWhenAsked(async () => {
    requireModel();
    const hint = `the campaign stops with its report; to go on, raise budgets.llm_tokens / budgets.llm_usd in ${paths.topic}, then a3r resume ${paths.id} --reopen`;
    const model = await openLeaderModel(env, { ledgerFile: paths.ledger, budget: { tokens: topic.budgets.llmTokens, usd: topic.budgets.llmUsd }, hint });
    // Loaded only here: the model planner's prompts and schemas are not needed by a heuristic campaign.
    return createLlmPlanner({ model });
  });
}

/**
 * The llm planner, opened at its first call: resuming a finished campaign, or one waiting
 * for review, needs no model keys, since nothing is asked of the model then.
 */
class PlannerOpenedWhenAsked implements Planner {
  readonly name = "llm";
  private opened: Promise<Planner> | undefined;

  constructor(private readonly open: () => Promise<Planner>) {}

  private planner(): Promise<Planner> {
    this.opened ??= this.open();
    return this.opened;
  }

  async frame(topic: Topic): Promise<FramedQuestion> {
    return (await this.planner()).frame!(topic);
  }

  async next(input: PlannerInput): Promise<PlannerStep> {
    return (await this.planner()).next(input);
  }

  async writeBlueprints(input: BlueprintWritingInput): Promise<BlueprintText[]> {
    return (await this.planner()).writeBlueprints!(input);
  }

  async conclude(input: ConclusionInput): Promise<Conclusion> {
    return (await this.planner()).conclude!(input);
  }
}
