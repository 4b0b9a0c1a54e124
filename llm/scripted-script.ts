import { readFile } from "node:fs/promises";
import { z } from "zod";
import { LineCounter, parseDocument } from "yaml";
import { A3rError } from "../core/errors.ts";

/** A substring, or a regular expression written as "/pattern/flags". */
const textPattern = z.string().min(1);

const failureCodes = ["LLM_AUTH_FAILED", "LLM_RATE_LIMITED", "LLM_UNAVAILABLE", "LLM_TIMEOUT", "LLM_BAD_REQUEST"] as const;

export const scriptStepSchema = z
  .object({
    match: z
      .object({ role: z.string().min(1).optional(), system: textPattern.optional(), lastUserMessage: textPattern.optional() })
      .strict()
      .optional(),
    text: z.string().optional(),
    /** A structured answer; validated against the request's schema like a real model's. */
    parsed: z.unknown().optional(),
    toolCalls: z.array(z.object({ id: z.string().optional(), name: z.string().min(1), input: z.unknown() }).strict()).optional(),
    usage: z
      .object({
        inputTokens: z.number().int().min(0),
        outputTokens: z.number().int().min(0),
        cachedTokens: z.number().int().min(0).default(0),
      })
      .strict()
      .optional(),
    stopReason: z.string().optional(),
    /** Wait this long before answering (to exercise deadlines and aborts). */
    delayMs: z.number().int().min(0).optional(),
    /** Fail the call with this error code instead of answering. */
    error: z
      .object({ code: z.enum(failureCodes), message: z.string().optional() })
      .strict()
      .optional(),
    /** By-matching mode only: the step may answer any number of times. */
    repeat: z.boolean().optional(),
  })
  .strict()
  .refine((step) => step.text !== undefined || step.parsed !== undefined || step.toolCalls !== undefined || step.error, {
    message: "a step needs text, parsed, toolCalls or error",
  });

export const scriptSchema = z
  .object({
    mode: z.enum(["in-order", "by-matching"]).default("in-order"),
    model: z.string().min(1).optional(),
    steps: z.array(scriptStepSchema),
  })
  .strict();

export type ScriptStep = z.output<typeof scriptStepSchema>;
export type Script = z.output<typeof scriptSchema>;
/** What a script file or object may hold: the full form, or just the list of steps. */
export type ScriptDefinition = z.input<typeof scriptSchema> | z.input<typeof scriptStepSchema>[];

/** Validates a script given as an object (a bare list of steps is accepted too). */
export function parseScript(value: unknown, source = "script"): Script {
  const result = scriptSchema.safeParse(Array.isArray(value) ? { steps: value } : value);
  if (result.success) return result.data;
  throw scriptError(source, result.error, () => undefined, Array.isArray(value));
}

/** Reads a YAML or JSON script file (JSON is YAML), reporting problems with their line. */
export async function loadScript(path: string): Promise<Script> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new A3rError("LLM_CONFIG_INVALID", `cannot read the model script ${path}: ${(error as Error).message}`, {
      where: path,
      hint: "Point A3R_LLM_SCRIPT (or the script option) at an existing YAML or JSON file.",
    });
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter });
  if (document.errors.length > 0) {
    const first = document.errors[0];
    const line = first?.linePos?.[0].line;
    throw new A3rError("YAML_INVALID", `${path}${line ? `:${line}` : ""}: ${first?.message ?? "invalid YAML"}`, {
      where: path,
      hint: "Fix the YAML syntax of the model script.",
    });
  }
  const value: unknown = document.toJS();
  const bare = Array.isArray(value);
  const result = scriptSchema.safeParse(bare ? { steps: value } : value);
  if (result.success) return result.data;
  const lineOf = (path: PropertyKey[]): number | undefined => {
    // A missing field has no node: report the line of the nearest enclosing one.
    for (let length = path.length; length >= 0; length--) {
      const node = document.getIn(path.slice(0, length), true) as { range?: [number, number, number] } | undefined;
      if (node?.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  throw scriptError(path, result.error, lineOf, bare);
}

function scriptError(source: string, error: z.ZodError, lineOf: (path: PropertyKey[]) => number | undefined, bare: boolean): A3rError {
  const issue = error.issues[0];
  const path = issue?.path ?? [];
  // For a bare list the schema path starts with "steps", which the file does not have.
  const filePath = bare ? path.slice(1) : path;
  const line = lineOf(filePath);
  const field = path.map(String).join(".") || "(root)";
  return new A3rError("LLM_CONFIG_INVALID", `${source}${line ? `:${line}` : ""}: ${field}: ${issue?.message ?? "invalid"}`, {
    where: `${source}${line ? `:${line}` : ""}`,
    hint: "Fix the model script: a list of steps, or {mode, model, steps}; see llm/README.md.",
    details: { issues: error.issues.map((item) => `${item.path.map(String).join(".")}: ${item.message}`) },
  });
}

/** True when the text contains the pattern, or matches it when written as /regex/flags. */
export function textMatches(pattern: string, text: string): boolean {
  const regex = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  if (regex?.[1] !== undefined) return new RegExp(regex[1], regex[2]).test(text);
  return text.includes(pattern);
}

export interface MatchableRequest {
  role: string;
  system?: string;
  lastUserMessage: string;
}

export function stepMatches(step: ScriptStep, request: MatchableRequest): boolean {
  const match = step.match;
  if (!match) return true;
  if (match.role !== undefined && match.role !== request.role) return false;
  if (match.system !== undefined && !textMatches(match.system, request.system ?? "")) return false;
  if (match.lastUserMessage !== undefined && !textMatches(match.lastUserMessage, request.lastUserMessage)) return false;
  return true;
}
