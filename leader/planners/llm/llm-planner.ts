import type { z } from "zod";
import { A3rError } from "../../../core/errors.ts";
import type { ChatMessage, ChatModel, LlmRole } from "../../../llm/index.ts";
import { blueprintsAnswer, conclusionAnswer, framedQuestionAnswer, stageDecisionAnswer, type FramedQuestionAnswer } from "./answers.ts";
import { checkBlueprintAnswer } from "./blueprint-answer.ts";
import { concludePrompt, framePrompt, planPrompt, problemsPrompt, writePrompt } from "./prompts.ts";
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
  prompt: string;
  maxTokens: number;
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
      prompt: framePrompt(topic, this.promptOptions),
      maxTokens: 2000,
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
      prompt: planPrompt(input, knobs, this.promptOptions),
      maxTokens: 6000,
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
      prompt: writePrompt(input, this.promptOptions),
      maxTokens: Math.min(32_000, 2000 + 1500 * input.drafts.length),
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
      prompt: concludePrompt(input, knobsOf(input.topic, input.framing), this.promptOptions),
      maxTokens: 3000,
      check: (answer) => {
        if (answer.answer.trim() === "") return { ok: false, problems: ["`answer` is empty: answer the question in words, citing the figures"] };
        return { ok: true, value: { answer: answer.answer.trim(), claims: answer.claims, caveats: answer.caveats } };
      },
    });
  }

  /** One call, and once more with the problems when the answer is unusable. */
  private async ask<Schema extends z.ZodType, Result>(ask: Ask<Schema, Result>): Promise<Result> {
    const system = systemPromptOf(await loadSkill(ask.skill, this.skillsDir));
    const messages: ChatMessage[] = [{ role: "user", content: ask.prompt }];
    let problems: string[] = [];
    for (let round = 1; round <= 2; round++) {
      const result = await this.model.complete({ system, messages, schema: ask.schema, schemaName: ask.schemaName, maxTokens: ask.maxTokens, role: ask.role });
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
