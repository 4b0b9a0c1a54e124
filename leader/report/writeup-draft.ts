import { z } from "zod";
import type { ChatModel } from "../../llm/index.ts";
import type { WriteupDocument } from "./writeup-types.ts";

/**
 * Optional (`a3r writeup ID --llm`): a language model drafts the abstract and a discussion
 * from the template document itself, the grounded facts, and nothing else. Its prose is
 * shown apart, labelled as drafted, beside the template's; every number in it is checked
 * against the numbers of the facts, and one the facts do not hold is flagged, never
 * silently kept. The template document stays the record.
 */
export const writeupDraftSchema = z.strictObject({
  abstract: z.string().min(1).max(4000),
  discussion: z.string().min(1).max(8000),
});

export interface WriteupDraft {
  abstract: string;
  discussion: string;
  model: string;
  /** Numbers in the draft that no fact holds. */
  ungrounded: string[];
}

const system = [
  "You draft the abstract and a short discussion of a research write-up.",
  "Use only the facts given: every number you write must appear in them, with the same meaning.",
  "Say what was decided and what was not, in the facts' own terms (yes, no, equivalent within the margin, not decided).",
  "Do not claim an optimum, a cause or a generalization the facts do not state. No markdown headings.",
].join(" ");

export async function draftWriteupProse(model: ChatModel, facts: string): Promise<WriteupDraft> {
  const answer = await model.complete({
    system,
    messages: [{ role: "user", content: `The facts (a write-up built from the computed figures):\n\n${facts}` }],
    schema: writeupDraftSchema,
    schemaName: "writeup_draft",
    maxTokens: 2000,
    temperature: 0,
    role: "analyze",
  });
  const draft = answer.parsed ?? writeupDraftSchema.parse(JSON.parse(answer.text));
  return { ...draft, model: answer.model, ungrounded: ungroundedNumbers(`${draft.abstract}\n${draft.discussion}`, facts) };
}

/** The numbers of `text` (0.4696, -0.2, 97.5%, 8.126e-4) that do not occur in `facts`. */
export function ungroundedNumbers(text: string, facts: string): string[] {
  const numbers = (source: string) => source.match(/-?\d+(?:\.\d+)?(?:e-?\d+)?/gi) ?? [];
  const known = new Set(numbers(facts).flatMap((value) => [value, value.replace(/^-/, "")]));
  return [...new Set(numbers(text).filter((value) => !known.has(value) && !known.has(value.replace(/^-/, ""))))];
}

/** The draft as a section of the document, placed after the template's abstract. */
export function withDraft(document: WriteupDocument, draft: WriteupDraft): WriteupDocument {
  const flag =
    draft.ungrounded.length === 0
      ? `Drafted by ${draft.model} from the facts below; every number in it occurs in them.`
      : `Drafted by ${draft.model} from the facts below. FLAGGED: numbers that occur nowhere in the facts: ${draft.ungrounded.join(", ")}.`;
  const section = {
    id: "drafted",
    title: "Drafted abstract and discussion (model-written)",
    blocks: [
      { kind: "paragraph" as const, runs: [flag] },
      { kind: "paragraph" as const, runs: [draft.abstract] },
      { kind: "paragraph" as const, runs: [draft.discussion] },
    ],
  };
  const [abstract, ...rest] = document.sections;
  return { ...document, sections: [abstract!, section, ...rest] };
}
