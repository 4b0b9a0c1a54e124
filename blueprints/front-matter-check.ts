import type { z } from "zod";
import type { BlueprintFormat } from "./blueprint.ts";
import { problem } from "./finding.ts";
import type { Problem } from "./finding.ts";
import { agentjetFrontMatterSchema, blueprintFrontMatterSchema, blueprintVersion } from "./front-matter-schema.ts";

const fieldHints: Record<string, string> = {
  a3r: `write a3r: ${blueprintVersion} as the first front-matter field`,
  id: "use lower-case letters, digits, '.', '_' and '-' (at most 80 characters), e.g. id: s1-lr-3e-6",
  campaign: "use the campaign's id: lower-case letters, digits, '.', '_' and '-'",
  stage: "write the stage as a whole number, e.g. stage: 1",
  mode: "write mode: swarm or mode: classic",
  hypothesis: "write the hypothesis label as text, e.g. hypothesis: H2",
  gpus: "write the number of GPUs as a whole number, e.g. gpus: 1",
  seed: "write the seed as a whole number, e.g. seed: 1",
  first_signal_timeout: "write a duration such as 20m or 1h",
  expected_steps: "write the planned number of steps as a whole number above 0, e.g. expected_steps: 20",
  metric: "write metric: { name: reward_mean, goal: maximize } (goal is maximize or minimize)",
  prediction: "write the prediction as one quoted sentence",
  overrides: "write overrides as a mapping, e.g. overrides: { lr: 3.0e-6 }",
};

/**
 * Checks front-matter data against the schema of its format, one problem per issue, each
 * on the line of the field it is about (line 1, the opening ---, for a missing field).
 */
export function checkFrontMatter(data: Record<string, unknown>, format: BlueprintFormat, fieldLines: Record<string, number>): Problem[] {
  const schema: z.ZodType = format === "a3r" ? blueprintFrontMatterSchema : agentjetFrontMatterSchema;
  const result = schema.safeParse(data);
  if (result.success) return [];
  return result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    const top = String(issue.path[0] ?? "");
    const line = lineOfPath(issue.path.map(String), fieldLines);
    const missing = !hasPath(data, issue.path.map(String));
    const message = missing ? `front matter lacks the required field "${path}"` : `front matter field "${path}" is invalid: ${issue.message}`;
    return problem("FRONT_MATTER_INVALID", line, message, fieldHints[top] ?? "fix the field to match the blueprint schema (blueprints/front-matter-schema.ts)");
  });
}

function lineOfPath(path: string[], fieldLines: Record<string, number>): number {
  for (let length = path.length; length > 0; length -= 1) {
    const line = fieldLines[path.slice(0, length).join(".")];
    if (line !== undefined) return line;
  }
  return 1;
}

function hasPath(data: unknown, path: string[]): boolean {
  let current: unknown = data;
  for (const key of path) {
    if (current === null || typeof current !== "object" || !(key in current)) return false;
    current = (current as Record<string, unknown>)[key];
  }
  return current !== undefined;
}
