import type { z } from "zod";
import { A3rError } from "../../../core/errors.ts";
import type { ChatMessage, ChatModel, ChatResult, LlmRole } from "../../../llm/index.ts";
import { estimateTokens } from "../../../llm/context-window.ts";
import { blueprintsAnswer, conclusionAnswer, framedQuestionAnswer, stageDecisionAnswer, type FramedQuestionAnswer } from "./answers.ts";
import { checkBlueprintAnswer } from "./blueprint-answer.ts";
import { concludePrompt, framePrompt, maxTrim, planPrompt, problemsPrompt, writePrompt, type PromptOptions } from "./prompts.ts";
import { defaultSkillsDir, loadSkill, systemPromptOf, type LeaderSkillName } from "./skills.ts";
import { budgetProblem, convertDecision, evidenceOf, knobsOf, llmPlannerNeeds, stopStep } from "./stage-plan.ts";
import type {
  BlueprintText,
  BlueprintWritingInput,
  Conclusion,
  ConclusionInput,
  FramedQuestion,
  Planner,
  PlannerInput,
  PlannerStep,
} from "../../domain/planner.ts";
import { bestConfiguration, summarizeConfigurations } from "../../domain/configurations.ts";
import type { Topic } from "../../domain/topic.ts";

/**
 * The language-model planner: the planner port answered by a model through llm/, with
 * each role's system prompt built from its skill (skills/leader-*), structured answers
 * (leader/planners/llm/answers.ts) and everything that makes a plan valid done in code.
 *
 * Per method: the role it is booked under, the skill, what it sends, what it expects.
 * - `frame` (frame, leader-frame-topic): the topic → a FramedQuestion. A topic's knobs and
 *   metric are authoritative: variables must be its knobs, the metric is its own.
 * - `next` (plan, leader-plan-stage): the history as computed figures → continue/revise
 *   with a stage plan, or stop with a reason. Ids, experiments (configurations × seeds)
 *   and budgets are computed here; a topic that lacks what blueprints need, or budgets
 *   that leave no room for one configuration, stop without asking the model.
 * - `writeBlueprints` (write, leader-write-blueprint): the rendered drafts (and, on the
 *   graph's repair round, the audit findings) → the blueprints, drafts kept where the
 *   model gives none; what an experiment is (id, seed, overrides ...) cannot change.
 * - `conclude` (analyze, leader-analyze-results): the figures and the stop → an answer
 *   with claims citing experiment ids and caveats; claims are returned as given, for the
 *   report to flag those citing ids that do not exist (leader/report/conclusion-check.ts).
 *
 * An answer that is well-formed but unusable (an unknown knob, a prediction about a
 * configuration that is not there, an id that is not a draft's) is sent back once with
 * the problems; a second unusable answer throws PLANNER_OUTPUT_INVALID naming them. The
 * llm/ layer's own repair round (answers that do not match the schema) comes before.
 *
 * Left out: determinism (the same input may give another plan; the graph's checkpoints,
 * not the planner, keep a resumed campaign from asking twice), budgets of the model's
 * own spending (llm/'s), and approval of commands (the audit's and the graph's).
 */
export interface LlmPlannerOptions {
  model: ChatModel;
  /** Folder holding the leader-* skill folders (default: the checkout's skills/). */
  skillsDir?: string;
  /** Bound of each fenced text sent to the model (default: llm/untrusted-text.ts's). */
  maxUntrustedChars?: number;
}

interface Ask<Schema extends z.ZodType, Result> {
  role: LlmRole;
  skill: LeaderSkillName;
  schema: Schema;
  schemaName: string;
  /** The user turn at a trim level (prompts.ts): 0 is all of it. */
  prompt: (options: PromptOptions) => string;
  /** What the answer needs; sent as max_tokens (less when the window leaves less, down to `minTokens`). */
  maxTokens: number;
  minTokens: number;
  /** Turns a well-formed answer into the result, or says what is wrong with it. */
  check: (answer: z.output<Schema>) => { ok: true; value: Result } | { ok: false; problems: string[] };
}

export class LlmPlanner implements Planner {
  readonly name = "llm";
  private readonly model: ChatModel;
  private readonly skillsDir: string;
  private readonly promptOptions: { maxUntrustedChars?: number };

  constructor(options: LlmPlannerOptions) {
    this.model = options.model;
    this.skillsDir = options.skillsDir ?? defaultSkillsDir;
    this.promptOptions = options.maxUntrustedChars === undefined ? {} : { maxUntrustedChars: options.maxUntrustedChars };
  }

  async frame(topic: Topic): Promise<FramedQuestion> {
    return this.ask({
      role: "frame",
      skill: "leader-frame-topic",
      schema: framedQuestionAnswer,
      schemaName: "framed_question",
      prompt: (trim) => framePrompt(topic, { ...this.promptOptions, ...trim }),
      maxTokens: 300 + 100 * Math.max(1, Object.keys(topic.knobs).length),
      minTokens: 150,
      check: (answer) => checkFraming(answer, topic),
    });
  }

  async next(input: PlannerInput): Promise<PlannerStep> {
    const { topic, history } = input;
    const knobs = knobsOf(topic, input.framing);
    const summaries = summarizeConfigurations(history);
    const best = topic.metric ? bestConfiguration(summaries, topic.metric.goal) : undefined;
    const needs = llmPlannerNeeds(topic, knobs);
    if (needs.length > 0) return stopStep("needs-input", `the llm planner cannot plan "${topic.title}" yet: ${needs.join("; ")}`, best, { needs });
    // Not even one configuration fits: stop before paying for a plan that cannot run.
    const stage = history.length + 1;
    const over = budgetProblem(input, stage, topic.seeds);
    if (over) return stopStep("budget", over.explanation, best, { ...evidenceOf(summaries), ...over.evidence });
    return this.ask({
      role: "plan",
      skill: "leader-plan-stage",
      schema: stageDecisionAnswer,
      schemaName: "stage_decision",
      prompt: (trim) => planPrompt(input, knobs, { ...this.promptOptions, ...trim }),
      // A decision is a rationale and, per configuration, a delta, a hypothesis and a prediction.
      maxTokens: 500 + 200 * Math.min(8, Math.max(2, Math.floor((topic.budgets.experiments - experimentsUsed(input)) / topic.seeds))),
      minTokens: 300,
      check: (answer) => {
        const converted = convertDecision(answer, input, knobs);
        return converted.ok ? { ok: true, value: converted.step } : converted;
      },
    });
  }

  async writeBlueprints(input: BlueprintWritingInput): Promise<BlueprintText[]> {
    return this.ask({
      role: "write",
      skill: "leader-write-blueprint",
      schema: blueprintsAnswer,
      schemaName: "blueprints",
      prompt: (trim) => writePrompt(input, { ...this.promptOptions, ...trim }),
      // Each blueprint given back whole, with room for what the model adds to it.
      maxTokens: Math.min(
        32_000,
        input.drafts.reduce((sum, draft) => sum + estimateTokens(draft.text) + 300, 200),
      ),
      minTokens: 200,
      check: (answer) => {
        const checked = checkBlueprintAnswer(answer, input.drafts);
        return checked.ok ? { ok: true, value: checked.blueprints } : checked;
      },
    });
  }

  async conclude(input: ConclusionInput): Promise<Conclusion> {
    return this.ask({
      role: "analyze",
      skill: "leader-analyze-results",
      schema: conclusionAnswer,
      schemaName: "conclusion",
      prompt: (trim) => concludePrompt(input, knobsOf(input.topic, input.framing), { ...this.promptOptions, ...trim }),
      maxTokens: 1200,
      minTokens: 300,
      check: (answer) => {
        if (answer.answer.trim() === "") return { ok: false, problems: ["`answer` is empty: answer the question in words, citing the figures"] };
        return { ok: true, value: { answer: answer.answer.trim(), claims: answer.claims, caveats: answer.caveats } };
      },
    });
  }

  /** One call, and once more with the problems when the answer is unusable. */
  private async ask<Schema extends z.ZodType, Result>(ask: Ask<Schema, Result>): Promise<Result> {
    const system = systemPromptOf(await loadSkill(ask.skill, this.skillsDir));
    const fit = await this.fit(ask, system);
    const messages: ChatMessage[] = [{ role: "user", content: fit.prompt }];
    let problems: string[] = [];
    for (let round = 1; round <= 2; round++) {
      const result = await this.completeTwiceOnDeadline(
        { system, messages, schema: ask.schema, schemaName: ask.schemaName, maxTokens: fit.maxTokens, role: ask.role },
        fit,
      );
      if (result.parsed === undefined) {
        problems = [`no "${ask.schemaName}" answer came back${result.toolCalls ? " (the model called a tool instead)" : ""}`];
      } else {
        const checked = ask.check(result.parsed as z.output<Schema>);
        if (checked.ok) return checked.value;
        problems = checked.problems;
      }
      messages.push(
        { role: "assistant", content: result.text.trim() === "" ? "(empty answer)" : result.text },
        { role: "user", content: problemsPrompt(problems) },
      );
    }
    throw new A3rError(
      "PLANNER_OUTPUT_INVALID",
      `the ${this.model.provider} model ${this.model.model} gave no usable "${ask.schemaName}" answer, even when told what was wrong: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? ` (and ${problems.length - 5} more)` : ""}`,
      {
        hint: "read the problems: a stronger model, or a topic that states its knobs and metric plainly, usually helps",
        details: { role: ask.role, schemaName: ask.schemaName, problems },
      },
    );
  }

  /**
   * The prompt at the first trim level whose conservative estimate (llm/context-window.ts)
   * leaves the answer its room in the model's window; at the deepest level the answer gets
   * what is left, down to its minimum. A window too small even then is still asked: the
   * estimate is high, and the server's refusal is the definite answer (named in the error).
   */
  private async fit<Schema extends z.ZodType, Result>(ask: Ask<Schema, Result>, system: string): Promise<Fit> {
    const window = await this.model.contextWindow?.();
    if (!window) return { prompt: ask.prompt({}), maxTokens: ask.maxTokens, promptTokens: undefined, window: undefined };
    // Chat-template tokens around the turns, and the schema a server may show the model.
    const overhead = 64 + estimateTokens(ask.schemaName);
    let prompt = "";
    let promptTokens = 0;
    for (let trim = 0; trim <= maxTrim; trim++) {
      prompt = ask.prompt({ trim });
      promptTokens = estimateTokens(system) + estimateTokens(prompt) + overhead;
      if (promptTokens + ask.maxTokens <= window.tokens) return { prompt, maxTokens: ask.maxTokens, promptTokens, window, trim };
    }
    return { prompt, maxTokens: Math.max(ask.minTokens, Math.min(ask.maxTokens, window.tokens - promptTokens)), promptTokens, window, trim: maxTrim };
  }

  /**
   * A deadline is not the end: the call is made once more (a slow local model may have been
   * busy); a second deadline is final, and says it happened twice. A refusal because the
   * prompt does not fit says the estimate and the window.
   */
  private async completeTwiceOnDeadline(request: Parameters<ChatModel["complete"]>[0], fit: Fit): Promise<ChatResult<unknown>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.model.complete(request);
      } catch (error) {
        if (!(error instanceof A3rError)) throw error;
        if (error.code === "LLM_TIMEOUT" && attempt < 2) continue;
        if (error.code === "LLM_TIMEOUT") throw retold(error, `${error.message}, twice`, { attempts: attempt });
        if (error.code === "LLM_BAD_REQUEST" && error.details?.contextOverflow === true && fit.window) {
          const estimate = `the prompt is about ${fit.promptTokens} tokens by a3r's estimate with the answer's ${fit.maxTokens} on top, and the window is ${fit.window.tokens} (from ${fit.window.source})`;
          throw retold(error, `${error.message}: ${estimate}`, { promptTokens: fit.promptTokens, maxTokens: fit.maxTokens, contextTokens: fit.window.tokens });
        }
        throw error;
      }
    }
  }
}

interface Fit {
  prompt: string;
  maxTokens: number;
  /** The estimate of system + prompt, when a window was known. */
  promptTokens: number | undefined;
  window: { tokens: number; source: string } | undefined;
  trim?: number;
}

/** The same error with a fuller message and more details. */
function retold(error: A3rError, message: string, details: Record<string, unknown>): A3rError {
  return new A3rError(error.code, message, {
    ...(error.where === undefined ? {} : { where: error.where }),
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    details: { ...error.details, ...details },
  });
}

function experimentsUsed(input: PlannerInput): number {
  return input.history.reduce((sum, record) => sum + record.plan.experiments.length, 0);
}

const knobName = /^[A-Za-z_][\w.]*$/;

function checkFraming(answer: FramedQuestionAnswer, topic: Topic): { ok: true; value: FramedQuestion } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  if (answer.question.trim() === "") problems.push("`question` is empty: restate the topic as one answerable question");
  if (answer.answeredWhen.trim() === "") problems.push("`answeredWhen` is empty: say which result would answer the question");
  const topicKnobs = Object.keys(topic.knobs);
  const seen = new Set<string>();
  for (const variable of answer.variables) {
    if (!knobName.test(variable.name))
      problems.push(`variable "${variable.name}" is not a config key (letters, digits, _ and dots, such as lr or optimizer.lr)`);
    else if (topicKnobs.length > 0 && !topicKnobs.includes(variable.name))
      problems.push(`variable "${variable.name}" is not a knob of the topic (its knobs: ${topicKnobs.join(", ")})`);
    if (seen.has(variable.name)) problems.push(`variable "${variable.name}" is listed twice`);
    seen.add(variable.name);
    if (variable.values.length === 0) problems.push(`variable "${variable.name}" has no values (the first is the baseline)`);
  }
  if (!topic.metric && answer.metric.name.trim() === "") problems.push("`metric.name` is empty: name the metric the runs record");
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    value: {
      question: answer.question.trim(),
      variables: answer.variables,
      controls: answer.controls,
      // The topic's metric is the one the analysis scores; a framing cannot change it.
      metric: topic.metric ? { name: topic.metric.name, goal: topic.metric.goal } : { name: answer.metric.name.trim(), goal: answer.metric.goal },
      answeredWhen: answer.answeredWhen.trim(),
    },
  };
}
