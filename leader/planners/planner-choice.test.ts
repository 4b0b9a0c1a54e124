import { describe, expect, it } from "vitest";
import { isA3rError, type A3rError } from "../../core/errors.ts";
import { choosePlanner, type PlannerFlag } from "./planner-choice.ts";

function refusal(flag: PlannerFlag, env: NodeJS.ProcessEnv): A3rError {
  try {
    choosePlanner(flag, env);
  } catch (error) {
    if (isA3rError(error, "LLM_CONFIG_INVALID")) return error;
    throw error;
  }
  throw new Error("the choice was accepted");
}

describe("choosePlanner", () => {
  it("auto picks the llm planner when a key is set, and says which model and why", () => {
    expect(choosePlanner("auto", { ANTHROPIC_API_KEY: "k" })).toEqual({
      planner: "llm",
      line: "planner: llm (auto: anthropic claude-sonnet-4-6 from ANTHROPIC_API_KEY)",
    });
    expect(choosePlanner("auto", { OPENAI_API_KEY: "k", A3R_LLM_MODEL: "gpt-5" }).line).toBe("planner: llm (auto: openai gpt-5 from OPENAI_API_KEY)");
    expect(choosePlanner("auto", { A3R_LLM_PROVIDER: "openai", A3R_LLM_BASE_URL: "http://localhost:8000/v1", A3R_LLM_MODEL: "qwen3" }).line).toBe(
      "planner: llm (auto: openai qwen3 at http://localhost:8000/v1 from A3R_LLM_PROVIDER; no price known, its calls are counted in tokens and time)",
    );
    expect(choosePlanner("auto", { A3R_LLM_PROVIDER: "scripted", A3R_LLM_SCRIPT: "/s.yaml" }).line).toBe(
      "planner: llm (auto: scripted /s.yaml from A3R_LLM_PROVIDER)",
    );
  });

  it("auto falls back to the heuristic planner without a model, and says what to set", () => {
    expect(choosePlanner("auto", {})).toEqual({
      planner: "heuristic",
      line: "planner: heuristic (auto: no model configured; set ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL for a local server)",
    });
    // An empty variable is no configuration.
    expect(choosePlanner("auto", { A3R_LLM_PROVIDER: " ", ANTHROPIC_API_KEY: "" }).planner).toBe("heuristic");
  });

  it("takes --planner heuristic and --planner llm as given", () => {
    expect(choosePlanner("heuristic", { ANTHROPIC_API_KEY: "k" })).toEqual({ planner: "heuristic", line: "planner: heuristic (--planner heuristic)" });
    expect(choosePlanner("llm", { ANTHROPIC_API_KEY: "k" })).toEqual({
      planner: "llm",
      line: "planner: llm (anthropic claude-sonnet-4-6 from ANTHROPIC_API_KEY)",
    });
  });

  it("refuses --planner llm without a model, saying what to set", () => {
    const error = refusal("llm", {});
    expect(error.message).toBe("--planner llm needs a language model, and none is configured");
    expect(error.where).toBe("--planner");
    expect(error.hint).toMatch(/set ANTHROPIC_API_KEY, OPENAI_API_KEY, or A3R_LLM_PROVIDER with A3R_LLM_BASE_URL for a local server/);
    expect(error.hint).toMatch(/--planner heuristic/);
  });

  it("refuses a provider name that is no provider, even under auto", () => {
    for (const flag of ["auto", "llm"] as const) {
      const error = refusal(flag, { A3R_LLM_PROVIDER: "antropic", ANTHROPIC_API_KEY: "k" });
      expect(error.message).toBe('A3R_LLM_PROVIDER is "antropic", which is not a provider');
      expect(error.where).toBe("A3R_LLM_PROVIDER");
      expect(error.hint).toMatch(/anthropic, openai .* or scripted/);
    }
  });
});
