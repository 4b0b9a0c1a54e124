import { describe, expect, it } from "vitest";
import { A3rError, isA3rError } from "../../core/errors.ts";
import type { Planner } from "../domain/planner.ts";
import type { CampaignPlannerContext, PlannerKind } from "../domain/planner-kind.ts";
import { parseTopic } from "../domain/topic.ts";
import { choosePlanner, createCampaignPlanner, plannerTopicNeeds } from "./planner-choice.ts";
import { plannerFlags, plannerKinds, registerPlanner } from "./registry.ts";

// A throwaway planner, declared the way a planner's own folder would: its factory, what it
// needs from the environment (FIXED_PLANS) and from a topic, and its rank under auto.
const made: CampaignPlannerContext[] = [];
const fixedPlanner: PlannerKind = {
  name: "fixed",
  description: "plays back a fixed plan",
  autoRank: 3,
  readyWhen: "FIXED_PLANS is set",
  readiness: (env) =>
    env.FIXED_PLANS
      ? { ready: true, detail: `plans from ${env.FIXED_PLANS}` }
      : { ready: false, detail: "no FIXED_PLANS", refusal: (asked) => new A3rError("USAGE", `${asked} needs FIXED_PLANS`, { hint: "set FIXED_PLANS" }) },
  topicNeeds: (topic) => (topic.seeds > 1 ? [] : ["seeds: 2 or more"]),
  create: (context): Planner => {
    made.push(context);
    return { name: "fixed", next: async () => ({ kind: "stop", reason: "exhausted", detail: "fixed" }) } as unknown as Planner;
  },
};

const topic = parseTopic("The question, in words.", { file: "topic.md" });
const context = (env: NodeJS.ProcessEnv): CampaignPlannerContext => ({
  campaignId: "c",
  topic,
  topicFile: "/runs/c/topic.md",
  eventsFile: "/runs/c/events.jsonl",
  ledgerFile: "/runs/c/ledger.jsonl",
  env,
  willRun: true,
});

function withFixed<T>(action: () => T): T {
  const unregister = registerPlanner(fixedPlanner);
  try {
    return action();
  } finally {
    unregister();
  }
}

describe("a planner registered from outside leader/planners/", () => {
  it("is a --planner value, chosen by name with its own line, and refused by name when it is not ready", () => {
    withFixed(() => {
      expect(plannerFlags()).toEqual(["heuristic", "llm", "fixed", "auto"]);
      expect(choosePlanner("fixed", { FIXED_PLANS: "/p" })).toEqual({ planner: "fixed", line: "planner: fixed (plans from /p)" });
      let refusal: unknown;
      try {
        choosePlanner("fixed", {});
      } catch (error) {
        refusal = error;
      }
      expect(isA3rError(refusal, "USAGE") && refusal.message).toBe("--planner fixed needs FIXED_PLANS");
    });
  });

  it("is what auto picks when it ranks highest and is ready; otherwise auto says why it passed it over", () => {
    withFixed(() => {
      expect(choosePlanner("auto", { FIXED_PLANS: "/p", ANTHROPIC_API_KEY: "k" }).line).toBe("planner: fixed (auto: plans from /p)");
      expect(choosePlanner("auto", { ANTHROPIC_API_KEY: "k" }).line).toBe("planner: llm (auto: anthropic claude-sonnet-4-6 from ANTHROPIC_API_KEY)");
      expect(choosePlanner("auto", {}).line).toBe(
        "planner: heuristic (auto: no FIXED_PLANS; no model configured; set ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL for a local server)",
      );
    });
  });

  it("makes the planner of a campaign that recorded it, and says what a topic lacks for it", async () => {
    const unregister = registerPlanner(fixedPlanner);
    try {
      const planner = await createCampaignPlanner("fixed", context({ FIXED_PLANS: "/p" }));
      expect(planner.name).toBe("fixed");
      expect(made.at(-1)?.campaignId).toBe("c");
      expect(plannerTopicNeeds("fixed", { ...topic, seeds: 1 })).toEqual(["seeds: 2 or more"]);
    } finally {
      unregister();
    }
  });

  it("is gone once unregistered: the flag is refused and a campaign that recorded it is planned by the heuristic planner", async () => {
    withFixed(() => undefined);
    expect(plannerKinds().map((kind) => kind.name)).toEqual(["heuristic", "llm"]);
    expect(() => choosePlanner("fixed", {})).toThrow(/--planner fixed names no planner/);
    expect((await createCampaignPlanner("fixed", context({}))).name).toBe("heuristic");
    expect(() => registerPlanner({ ...fixedPlanner, name: "auto" })).toThrow(/not a planner's name/);
  });
});
