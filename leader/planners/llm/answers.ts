import { z } from "zod";

/**
 * What the language model must answer, per role, as zod schemas sent through llm/ as
 * structured output. Every field is required (an absent one is `null`) and no object has
 * free keys (a knob delta is a list of pairs, not a record), so the schemas meet OpenAI's
 * strict mode. They check shape only: whether a knob exists, a prediction's target is
 * known, an id is real or a stage fits the budgets is checked in code afterwards
 * (leader/planners/llm/stage-plan.ts, leader/planners/llm/blueprint-answer.ts), with messages the model can
 * act on when it is asked once more.
 */
const knobValue = z.union([z.number(), z.string(), z.boolean()]);

export const framedQuestionAnswer = z.object({
  question: z.string().describe("the topic restated as one precise, answerable question"),
  variables: z
    .array(
      z.object({
        name: z.string().describe("a config key (a knob)"),
        values: z.array(knobValue).describe("candidate values; the first is the baseline"),
        why: z.string(),
      }),
    )
    .describe("the independent variables"),
  controls: z.array(z.string()).describe("what is held fixed so that a difference can be attributed to the variables"),
  metric: z.object({ name: z.string(), goal: z.enum(["maximize", "minimize"]) }),
  answeredWhen: z.string().describe("the result that would answer the question"),
});

export type FramedQuestionAnswer = z.output<typeof framedQuestionAnswer>;

export const stopReasons = ["needs-input", "separated", "no-improvement", "exhausted", "budget", "stage-failed"] as const;

const plannedConfigurationAnswer = z.object({
  label: z.string().describe("a short name for this configuration, unique in the plan, used by other predictions to refer to it"),
  hypothesis: z.string().describe("the id of the hypothesis it tests"),
  purpose: z.string().describe("why it is in the stage, in one sentence"),
  delta: z
    .array(z.object({ knob: z.string(), value: knobValue }))
    .describe("the knobs whose value differs from the baseline; an empty list is the baseline itself"),
  prediction: z.object({
    kind: z.enum(["beats-configuration", "above-level", "records"]),
    text: z.string().describe("the prediction in words, falsifiable by the stage's results"),
    against: z.string().nullable().describe("beats-configuration: the label of a configuration in this plan, or the id of one measured before; else null"),
    level: z.number().nullable().describe("above-level: the fixed level it beats; else null"),
  }),
});

export const stagePlanAnswer = z.object({
  kind: z.enum(["screen", "refine"]),
  rationale: z.string(),
  hypotheses: z.array(z.object({ id: z.string(), statement: z.string() })),
  configurations: z.array(plannedConfigurationAnswer),
  decisions: z
    .array(z.object({ outcome: z.string(), decision: z.string() }))
    .describe("what each possible outcome of the stage leads to, decided before it runs"),
});

export const stageDecisionAnswer = z.object({
  decision: z
    .enum(["continue", "revise", "stop"])
    .describe("continue: the next stage as planned before; revise: a different course, with reasons; stop: end the campaign"),
  reasons: z.array(z.string()).describe("why, citing the figures given (required for revise and stop)"),
  stop: z
    .object({ reason: z.enum(stopReasons), explanation: z.string() })
    .nullable()
    .describe("with decision stop; else null"),
  plan: stagePlanAnswer.nullable().describe("with decision continue or revise: the next stage; else null"),
});

export type StagePlanAnswer = z.output<typeof stagePlanAnswer>;
export type StageDecisionAnswer = z.output<typeof stageDecisionAnswer>;

export const blueprintsAnswer = z.object({
  blueprints: z
    .array(z.object({ blueprintId: z.string(), markdown: z.string().describe("the complete blueprint file: front matter and the eight sections") }))
    .describe("the blueprints you changed; a draft you leave out is used as it is"),
});

export type BlueprintsAnswer = z.output<typeof blueprintsAnswer>;

export const conclusionAnswer = z.object({
  answer: z.string().describe("the answer to the question, in words, with the computed numbers it rests on"),
  claims: z.array(z.object({ text: z.string(), experimentIds: z.array(z.string()).describe("the experiment (blueprint) ids the claim rests on") })),
  caveats: z.array(z.string()),
});

export type ConclusionAnswer = z.output<typeof conclusionAnswer>;
