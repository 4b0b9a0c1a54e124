import { A3rError } from "../core/errors.ts";
import { stepMatches, type MatchableRequest, type Script, type ScriptStep } from "./scripted-script.ts";

/**
 * Chooses the step that answers a request. In order: each request takes the next step,
 * whose `match`, when given, must hold (a mismatch means the code under test asked
 * something else than the script expects). By matching: the first unused step whose
 * `match` holds answers; `repeat` steps are never used up.
 */
export class ScriptPlayer {
  private readonly used: boolean[];
  private position = 0;

  constructor(
    private readonly script: Script,
    private readonly source: string,
  ) {
    this.used = script.steps.map(() => false);
  }

  remainingSteps(): number {
    return this.script.steps.filter((step, index) => step.repeat === true || !this.used[index]).length;
  }

  next(request: MatchableRequest): ScriptStep {
    return this.script.mode === "in-order" ? this.nextInOrder(request) : this.nextByMatching(request);
  }

  private nextInOrder(request: MatchableRequest): ScriptStep {
    const index = this.position;
    const step = this.script.steps[index];
    if (!step) throw this.exhausted(request);
    if (!stepMatches(step, request)) {
      throw new A3rError(
        "LLM_SCRIPT_MISMATCH",
        `${this.source}: step ${index + 1} expects ${JSON.stringify(step.match)} but got a "${request.role}" request; last user message: ${excerpt(request.lastUserMessage)}`,
        {
          where: `${this.source} step ${index + 1}`,
          hint: "Reorder the script's steps, loosen the step's match, or use mode: by-matching.",
          details: { step: index + 1, role: request.role },
        },
      );
    }
    this.position += 1;
    this.used[index] = true;
    return step;
  }

  private nextByMatching(request: MatchableRequest): ScriptStep {
    const index = this.script.steps.findIndex((step, position) => (step.repeat === true || !this.used[position]) && stepMatches(step, request));
    const step = this.script.steps[index];
    if (!step) throw this.exhausted(request);
    this.used[index] = true;
    return step;
  }

  private exhausted(request: MatchableRequest): A3rError {
    return new A3rError(
      "LLM_SCRIPT_EXHAUSTED",
      `${this.source}: no step left to answer a "${request.role}" request (${this.script.steps.length} steps, mode ${this.script.mode}); last user message: ${excerpt(request.lastUserMessage)}`,
      {
        where: this.source,
        hint: "Add a step for this request to the script, or check why the model is called more often than the script expects.",
        details: { role: request.role, steps: this.script.steps.length },
      },
    );
  }
}

function excerpt(text: string, length = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(flat.length > length ? `${flat.slice(0, length)}…` : flat);
}
