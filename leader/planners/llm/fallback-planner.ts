import { appendEventOnce, readEvents } from "../../../campaign/index.ts";
import { formatDuration } from "../../../core/duration.ts";
import { A3rError } from "../../../core/errors.ts";
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
import type { Topic } from "../../domain/topic.ts";

/**
 * A weak or slow model costs answer quality, not the campaign. `heuristic`: a decision
 * the model cannot make (the server refused the request, e.g. a prompt over its window;
 * two deadlines in a row; answers that fail their schema after the repair rounds; a
 * server that stays unreachable or rate-limited) is made by the heuristic planner for that
 * step, and recorded: a `planner.fell_back` event, the stage plan's rationale or the stop's
 * explanation ("planned by the heuristic: the model timed out twice"), and the caveats of
 * the model's conclusion. `none` (`--planner llm` without `planner_fallback: heuristic`):
 * the error ends the command, its hint saying to resume once the knob is changed; the
 * graph's checkpoint makes `a3r resume` continue from the same step.
 *
 * Left out: budget refusals (LLM_BUDGET_EXCEEDED stops the campaign with its report, as
 * always), keys and configuration (a person must fix those), a caller's abort.
 */
export type FallbackMode = "heuristic" | "none";

export interface FallbackPlannerOptions {
  /** The model's planner. */
  model: Planner;
  /** The planner that makes the decisions the model cannot. */
  heuristic: Planner;
  /** Decided once, at the first failure: reading it may need the campaign's events. */
  mode: () => Promise<FallbackMode>;
  eventsFile: string;
  campaignId: string;
  /** The campaign's copy of its topic, where `planner_fallback: heuristic` may be set. */
  topicFile: string;
}

/** Codes a later, or other, decision-maker can do better than: the model's limits, not the person's setup. */
const fallbackCodes: ReadonlySet<string> = new Set([
  "LLM_BAD_REQUEST",
  "LLM_TIMEOUT",
  "LLM_OUTPUT_INVALID",
  "PLANNER_OUTPUT_INVALID",
  "LLM_UNAVAILABLE",
  "LLM_RATE_LIMITED",
]);

export const fellBackEvent = "planner.fell_back";

export class FallbackPlanner implements Planner {
  readonly name: string;
  private mode: Promise<FallbackMode> | undefined;

  constructor(private readonly options: FallbackPlannerOptions) {
    this.name = options.model.name;
  }

  async frame(topic: Topic): Promise<FramedQuestion> {
    return this.either(
      "frame",
      () => this.options.model.frame!(topic),
      async () => heuristicFraming(topic),
    );
  }

  async next(input: PlannerInput): Promise<PlannerStep> {
    const stage = input.history.length + 1;
    const step = input.history.length === 0 ? "plan stage 1" : `decide after stage ${input.history.length}`;
    const decided = await this.either(
      step,
      () => this.options.model.next(input),
      async (reason): Promise<PlannerStep> => {
        const planned = await this.options.heuristic.next(input);
        if (planned.kind === "stop") return { ...planned, explanation: `decided by the heuristic (${reason}): ${planned.explanation}` };
        return { ...planned, plan: { ...planned.plan, rationale: `stage ${stage} planned by the heuristic: ${reason}; ${planned.plan.rationale}` } };
      },
    );
    if (decided.kind !== "stop") return decided;
    // The stop's explanation is the report's "Stopped:" line: it says which steps the heuristic made.
    const summary = await this.fallbackSummary();
    return summary === undefined ? decided : { ...decided, explanation: `${decided.explanation.replace(/[.\s]+$/, "")}; ${summary}` };
  }

  async writeBlueprints(input: BlueprintWritingInput): Promise<BlueprintText[]> {
    const step = `stage ${input.plan.stage} blueprints${input.findings ? " (repair)" : ""}`;
    // The heuristic's blueprints are the drafts as a3r renders them from the topic's base.
    return this.either(
      step,
      () => this.options.model.writeBlueprints!(input),
      async () => input.drafts,
    );
  }

  async conclude(input: ConclusionInput): Promise<Conclusion> {
    const conclusion = await this.either(
      "conclude",
      () => this.options.model.conclude!(input),
      async (reason) => {
        // The report node records this as a skipped conclusion; the report stands on its computed figures.
        throw new A3rError("PLANNER_OUTPUT_INVALID", `no model-written conclusion: ${reason}; the report gives the computed figures`);
      },
    );
    // What the heuristic decided in the model's place is a caveat of the model's conclusion.
    const summary = await this.fallbackSummary();
    return summary === undefined ? conclusion : { ...conclusion, caveats: [...conclusion.caveats, summary] };
  }

  private async either<T>(step: string, ask: () => Promise<T>, instead: (reason: string) => Promise<T>): Promise<T> {
    try {
      return await ask();
    } catch (error) {
      if (!(error instanceof A3rError) || !fallbackCodes.has(error.code)) throw error;
      this.mode ??= this.options.mode();
      if ((await this.mode) === "none") throw withResumeHint(error, this.options);
      const reason = reasonOf(error);
      await appendEventOnce(this.options.eventsFile, fellBackEvent, { step }, { by: "heuristic", code: error.code, reason });
      return instead(reason);
    }
  }

  /** "the heuristic made frame and plan stage 1 (the model timed out twice)", from the events; undefined when it made none. */
  private async fallbackSummary(): Promise<string | undefined> {
    const { events } = await readEvents(this.options.eventsFile);
    const stepsByReason = new Map<string, string[]>();
    for (const event of events) {
      if (event.kind !== fellBackEvent || typeof event.step !== "string") continue;
      const reason = String(event.reason);
      stepsByReason.set(reason, [...(stepsByReason.get(reason) ?? []), event.step]);
    }
    if (stepsByReason.size === 0) return undefined;
    const parts = [...stepsByReason].map(([reason, steps]) => `${listed(steps)} (${reason})`);
    return `the heuristic made ${parts.join("; ")}`;
  }
}

function listed(items: string[]): string {
  return items.length < 2 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/** Why the model could not decide, in a few words for the plan, the events and the report. */
export function reasonOf(error: A3rError): string {
  const details = error.details ?? {};
  switch (error.code) {
    case "LLM_TIMEOUT": {
      const deadline = typeof details.timeoutMs === "number" ? ` (deadline ${formatDuration(details.timeoutMs)})` : "";
      return `the model timed out ${details.attempts === 2 ? "twice" : "once"}${deadline}`;
    }
    case "LLM_BAD_REQUEST":
      if (details.contextOverflow === true) {
        const window = typeof details.contextTokens === "number" ? ` of ${details.contextTokens} tokens` : "";
        return `the prompt does not fit the model's context window${window}`;
      }
      return "the model server refused the request";
    case "LLM_OUTPUT_INVALID":
      // The step names the answer; one wording per cause lets the report group the steps.
      return "the model's answers did not match their schema, even after a repair round";
    case "PLANNER_OUTPUT_INVALID":
      return "the model's answers were unusable, even when told what was wrong";
    case "LLM_UNAVAILABLE":
      return "the model server was unreachable or failing";
    default:
      return "the provider kept refusing for its rate limit";
  }
}

function withResumeHint(error: A3rError, options: { campaignId: string; topicFile: string }): A3rError {
  const fallback = /planner_fallback/.test(error.hint ?? "")
    ? ""
    : `, or let the heuristic make such steps (planner_fallback: heuristic in ${options.topicFile})`;
  const then = `then continue from this step with: a3r resume ${options.campaignId}`;
  const hint = `${(error.hint ?? "Change the model's settings").replace(/[.\s]+$/, "")}${fallback}; ${then}`;
  return new A3rError(error.code, error.message, {
    ...(error.where === undefined ? {} : { where: error.where }),
    hint,
    ...(error.details === undefined ? {} : { details: error.details }),
  });
}

/** The topic's own framing: its knobs as the variables, its metric, answered by a separation or a tie. */
export function heuristicFraming(topic: Topic): FramedQuestion {
  return {
    question:
      topic.question
        .split("\n")
        .find((line) => line.trim() !== "")
        ?.trim() ?? topic.title,
    variables: Object.entries(topic.knobs).map(([name, values]) => ({ name, values, why: "a knob of the topic (framed by the heuristic)" })),
    controls: [],
    metric: topic.metric ? { name: topic.metric.name, goal: topic.metric.goal } : { name: "", goal: "maximize" },
    answeredWhen: "one configuration is better than every other beyond seed noise, or the rest are the same as the best within the margin",
  };
}
