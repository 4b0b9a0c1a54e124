import type { ReviewInstruction } from "../../domain/planner.ts";
import type { Topic } from "../../domain/topic.ts";

/**
 * What the heuristic planner understands of a reviewer's `--instruct` text. It reads no
 * free text, so it takes a few exact forms, separated by `;` or new lines:
 *
 * - `seeds=3`: runs each configuration with that many seeds;
 * - `drop lr=0.5`: removes a candidate value of a knob (not its first, the baseline).
 *
 * Anything else is kept as "not understood" and shown in the plan's rationale, so the
 * reviewer sees it had no effect (the LLM planner reads instructions as text).
 */
export interface AppliedInstructions {
  topic: Topic;
  applied: string[];
  notUnderstood: string[];
}

export function applyInstructions(topic: Topic, instructions: readonly ReviewInstruction[] = []): AppliedInstructions {
  let adjusted: Topic = { ...topic, knobs: { ...topic.knobs } };
  const applied: string[] = [];
  const notUnderstood: string[] = [];
  for (const part of instructions
    .flatMap((instruction) => instruction.text.split(/[;\n]/))
    .map((text) => text.trim())
    .filter((text) => text !== "")) {
    const seeds = /^seeds\s*=\s*(\d+)$/i.exec(part);
    const drop = /^drop\s+([A-Za-z0-9_.-]+)\s*=\s*(\S+)$/i.exec(part);
    if (seeds && Number(seeds[1]) >= 1 && Number(seeds[1]) <= 100) {
      adjusted = { ...adjusted, seeds: Number(seeds[1]) };
      applied.push(part);
    } else if (drop && adjusted.knobs[drop[1]!]?.slice(1).some((value) => String(value) === drop[2])) {
      const [name, value] = [drop[1]!, drop[2]!];
      adjusted.knobs[name] = adjusted.knobs[name]!.filter((candidate, index) => index === 0 || String(candidate) !== value);
      applied.push(part);
    } else {
      notUnderstood.push(part);
    }
  }
  return { topic: adjusted, applied, notUnderstood };
}
