import { JsonlLedger } from "../../campaign/ledger.ts";
import { A3rError } from "../../core/errors.ts";
import { ledgerSpending } from "../../campaign/llm-spending.ts";
import { withBudget, type LlmBudgetLimit } from "../../llm/budget.ts";
import { chatModelFromEnv, describeModelChoice, type ChatModel, type ChatModelDependencies } from "../../llm/index.ts";

/**
 * Which planner a campaign runs with, decided from the `--planner` flag and the
 * environment (the only place the leader looks at model variables; llm/factory.ts reads
 * them). `line` is the first line the CLI prints, so a person always sees which planner
 * runs and why, before anything is spent.
 */
export type PlannerFlag = "heuristic" | "llm" | "auto";

export interface PlannerChoice {
  planner: "heuristic" | "llm";
  line: string;
}

const providers = ["anthropic", "openai", "scripted"];

const whatToSet = "set ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL for a local server";

/**
 * `heuristic` and `llm` are taken as given (`llm` without a configured model is a user
 * error saying what to set); `auto` picks `llm` when the environment configures a model
 * and `heuristic` otherwise. An A3R_LLM_PROVIDER that names no provider is refused even
 * under `auto`: a typo must not quietly turn a language-model campaign into a heuristic one.
 */
export function choosePlanner(flag: PlannerFlag, env: NodeJS.ProcessEnv): PlannerChoice {
  if (flag === "heuristic") return { planner: "heuristic", line: "planner: heuristic (--planner heuristic)" };
  const named = env.A3R_LLM_PROVIDER?.trim();
  if (named && !providers.includes(named)) {
    throw new A3rError("LLM_CONFIG_INVALID", `A3R_LLM_PROVIDER is "${named}", which is not a provider`, {
      where: "A3R_LLM_PROVIDER",
      hint: "Set A3R_LLM_PROVIDER to anthropic, openai (also for vLLM, Ollama and other OpenAI-compatible servers, with A3R_LLM_BASE_URL) or scripted, or unset it.",
    });
  }
  const model = describeModelChoice(env);
  if (model === undefined) {
    if (flag === "llm") {
      throw new A3rError("LLM_CONFIG_INVALID", "--planner llm needs a language model, and none is configured", {
        where: "--planner",
        hint: `To use a model, ${whatToSet} (see llm/README.md, "Pointing a3r at a model"); or run with --planner heuristic or auto.`,
      });
    }
    return { planner: "heuristic", line: `planner: heuristic (auto: no model configured; ${whatToSet})` };
  }
  // describeModelChoice says "anthropic claude-sonnet-4-6 (from ANTHROPIC_API_KEY)".
  const described = model.replace(/ \(from ([^)]+)\)$/, " from $1");
  return { planner: "llm", line: `planner: llm (${flag === "auto" ? "auto: " : ""}${described})` };
}

export interface LeaderModelOptions {
  /** The campaign's ledger.jsonl: every call is booked there, and the budget is read from it. */
  ledgerFile: string;
  /** The topic's `budgets.llm_tokens` and `budgets.llm_usd`; unset measures are not limited. */
  budget: LlmBudgetLimit;
  /** What to tell a person when the budget refuses a call (default: llm/budget.ts's). */
  hint?: string;
  /** For tests: fetch, warnings, clock (the sink is always the campaign ledger). */
  dependencies?: Omit<ChatModelDependencies, "sink">;
}

/**
 * The leader's model: the one the environment configures, booked to the campaign ledger,
 * and refused (LLM_BUDGET_EXCEEDED, before sending) once the campaign's budget would be
 * passed. The spending is read from the ledger before each call, so the workers'
 * diagnoses and the calls of an earlier leader process count too.
 */
export async function openLeaderModel(env: NodeJS.ProcessEnv, options: LeaderModelOptions): Promise<ChatModel> {
  const model = await chatModelFromEnv(env, { ...options.dependencies, sink: new JsonlLedger(options.ledgerFile) });
  return withBudget(model, {
    limit: options.budget,
    spent: () => ledgerSpending(options.ledgerFile),
    ...(options.hint === undefined ? {} : { hint: options.hint }),
  });
}
