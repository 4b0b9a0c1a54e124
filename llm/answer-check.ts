import type { z } from "zod";
import type { BackendResponse } from "./backend.ts";
import { unwrapAnswer, type OutputSpecification } from "./model-schema.ts";

export type AnswerCheck<T> = { ok: true; value: T } | { ok: false; issues: string[]; answerText: string };

/**
 * Validates a structured answer with the caller's schema. The answer comes from the
 * provider's dedicated channel when it has one, else from the text as JSON (tolerating a
 * markdown code fence, which models without strict mode like to add).
 */
export function checkAnswer<T>(response: BackendResponse, output: OutputSpecification, schema: z.ZodType<T>): AnswerCheck<T> {
  let candidate: unknown;
  let answerText: string;
  if (response.structured !== undefined) {
    candidate = response.structured;
    answerText = JSON.stringify(response.structured);
  } else {
    answerText = response.text;
    const parsed = parseJsonAnswer(response.text);
    if (!parsed.ok) return { ok: false, issues: [parsed.issue], answerText };
    candidate = parsed.value;
  }
  const result = schema.safeParse(unwrapAnswer(candidate, output));
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, issues: result.error.issues.map(formatIssue), answerText };
}

export function parseJsonAnswer(text: string): { ok: true; value: unknown } | { ok: false; issue: string } {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, issue: "(root): the answer is empty; expected a JSON value" };
  const fenced = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n?```$/.exec(trimmed);
  const body = fenced?.[1] ?? trimmed;
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch (error) {
    return { ok: false, issue: `(root): the answer is not valid JSON (${(error as Error).message})` };
  }
}

function formatIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join(".");
  return `${path === "" ? "(root)" : path}: ${issue.message}`;
}

/** The user turn of the single repair round. */
export function repairPrompt(output: OutputSpecification, issues: string[]): string {
  return [
    `Your previous answer does not match the required "${output.name}" format. Problems found:`,
    ...issues.map((issue) => `- ${issue}`),
    "",
    "Answer again with the complete corrected answer only, following this JSON Schema exactly:",
    JSON.stringify(output.jsonSchema),
  ].join("\n");
}
