import { A3rError } from "../../../core/errors.ts";
import { defaultPrices, describeModelChoice, findPrice, isProviderName, providerList } from "../../../llm/index.ts";
import type { CampaignPlannerContext, PlannerKind, PlannerReadiness } from "../../domain/planner-kind.ts";
import { readEvents } from "../../../campaign/index.ts";
import { HeuristicPlanner } from "../heuristic/heuristic-planner.ts";
import { FallbackPlanner, type FallbackMode } from "./fallback-planner.ts";
import { openLeaderModel } from "./leader-model.ts";
import { PlannerOpenedWhenAsked } from "./planner-opened-when-asked.ts";

const whatToSet = "set ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL for a local server";

/**
 * Ready when the environment configures a model (llm/factory.ts reads the variables; this
 * is the only place the leader looks at them). An A3R_LLM_PROVIDER that names no provider
 * is refused even under `auto`: a typo must not quietly turn a language-model campaign
 * into a heuristic one.
 */
function modelReadiness(env: NodeJS.ProcessEnv): PlannerReadiness {
  const named = env.A3R_LLM_PROVIDER?.trim();
  if (named && !isProviderName(named)) {
    const described = providerList("or", (name) =>
      name === "openai" ? "openai (also for vLLM, Ollama and other OpenAI-compatible servers, with A3R_LLM_BASE_URL)" : name,
    );
    throw new A3rError("LLM_CONFIG_INVALID", `A3R_LLM_PROVIDER is "${named}", which is not a provider`, {
      where: "A3R_LLM_PROVIDER",
      hint: `Set A3R_LLM_PROVIDER to ${described}, or unset it.`,
    });
  }
  const model = describeModelChoice(env);
  if (model === undefined)
    return {
      ready: false,
      detail: `no model configured; ${whatToSet}`,
      refusal: (asked) =>
        new A3rError("LLM_CONFIG_INVALID", `${asked} needs a language model, and none is configured`, {
          where: "--planner",
          hint: `To use a model, ${whatToSet} (see llm/README.md, "Pointing a3r at a model"); or run with --planner heuristic or auto.`,
        }),
    };
  // describeModelChoice says "anthropic claude-sonnet-4-6 (from ANTHROPIC_API_KEY)".
  const detail = model.replace(/ \(from ([^)]+)\)$/, " from $1");
  // A local server's model has no price: said once here, not as a warning mid-output.
  const local = env.A3R_LLM_BASE_URL?.trim() && env.A3R_LLM_MODEL?.trim() && !findPrice(env.A3R_LLM_MODEL.trim(), defaultPrices);
  return { ready: true, detail: local ? `${detail}; no price known, its calls are counted in tokens and time` : detail };
}

/**
 * A campaign planned by a model keeps its planner (it is never finished by the heuristic
 * one because a key went missing): without a model now it is refused, at once when the
 * leader is about to move, else at the model's first call.
 */
function createLlmPlanner(context: CampaignPlannerContext): FallbackPlanner {
  const requireModel = () => {
    if (modelReadiness(context.env).ready) return;
    throw new A3rError("LLM_CONFIG_INVALID", `campaign ${context.campaignId} is planned by a language model, and none is configured now`, {
      where: context.eventsFile,
      hint: "set the same model as when it started (ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL), then resume again",
    });
  };
  if (context.willRun) requireModel();
  const opened = new PlannerOpenedWhenAsked("llm", async () => {
    requireModel();
    const hint = `the campaign stops with its report; to go on, raise budgets.llm_tokens / budgets.llm_usd in ${context.topicFile}, then a3r resume ${context.campaignId} --reopen`;
    const budget = { tokens: context.topic.budgets.llmTokens, usd: context.topic.budgets.llmUsd };
    const model = await openLeaderModel(context.env, { ledgerFile: context.ledgerFile, budget, hint });
    // Loaded only here: the model planner's prompts and schemas are not needed by a heuristic campaign.
    const { LlmPlanner } = await import("./llm-planner.ts");
    return new LlmPlanner({ model });
  });
  return new FallbackPlanner({
    model: opened,
    heuristic: new HeuristicPlanner(),
    mode: () => fallbackModeOf(context),
    eventsFile: context.eventsFile,
    campaignId: context.campaignId,
    topicFile: context.topicFile,
  });
}

/**
 * A campaign started with `--planner auto` (its recorded planner line says so) or whose
 * topic sets `planner_fallback: heuristic` lets the heuristic make the steps the model
 * cannot; one started with `--planner llm` stops at such a step, to be resumed.
 */
async function fallbackModeOf(context: CampaignPlannerContext): Promise<FallbackMode> {
  if (context.topic.plannerFallback === "heuristic") return "heuristic";
  const { events } = await readEvents(context.eventsFile);
  const created = events.find((event) => event.kind === "campaign.created");
  const why = typeof created?.plannerWhy === "string" ? created.plannerWhy : "";
  return /^planner: llm \(auto\b/.test(why) ? "heuristic" : "none";
}

/** `--planner llm`: a language model plans, writes blueprints and concludes; needs a configured model. */
export const llmPlannerKind: PlannerKind = {
  name: "llm",
  description: "a language model; see README",
  autoRank: 2,
  readiness: modelReadiness,
  readyWhen: "a model is configured",
  create: createLlmPlanner,
};
