import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { A3rError } from "../../../core/errors.ts";
import { untrustedDataRule } from "../../../llm/untrusted-text.ts";

/**
 * The one loader of the leader's skills. The SKILL.md files under skills/ are the single
 * source of the agent's instructions (people and external coding agents read the same
 * text), so each system prompt is a skill body, read when the call is made, plus the rule
 * about fenced data. Nothing here holds instructions of its own beyond that rule.
 */
export const defaultSkillsDir = fileURLToPath(new URL("../../../skills/", import.meta.url));

export type LeaderSkillName = "leader-frame-topic" | "leader-plan-stage" | "leader-write-blueprint" | "leader-analyze-results";

export interface Skill {
  name: string;
  description: string;
  /** The procedure: everything after the front matter. */
  body: string;
  file: string;
}

export async function loadSkill(name: LeaderSkillName, skillsDir: string = defaultSkillsDir): Promise<Skill> {
  const file = join(skillsDir, name, "SKILL.md");
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new A3rError("FILE_NOT_FOUND", `cannot read the skill ${name} at ${file}: ${(error as Error).message}`, {
      where: file,
      hint: "restore the file from the checkout, or point skillsDir at a folder holding the leader's skills",
    });
  }
  return parseSkill(text, file);
}

/** Splits a SKILL.md into its front matter (name, description) and body. Pure. */
export function parseSkill(text: string, file = "<skill>"): Skill {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) throw skillInvalid(file, "it does not start with YAML front matter between --- lines");
  let data: unknown;
  try {
    data = parseYaml(match[1]!);
  } catch (error) {
    throw skillInvalid(file, `its front matter is not YAML (${(error as Error).message})`);
  }
  const fields = (data ?? {}) as Record<string, unknown>;
  if (typeof fields.name !== "string" || fields.name === "") throw skillInvalid(file, "its front matter has no `name`");
  if (typeof fields.description !== "string" || fields.description === "") throw skillInvalid(file, "its front matter has no `description`");
  const body = match[2]!.trim();
  if (body === "") throw skillInvalid(file, "its body (the procedure) is empty");
  return { name: fields.name, description: fields.description, body, file };
}

/** The system prompt of a role: the skill's procedure, then what fenced data means. */
export function systemPromptOf(skill: Skill): string {
  return `${skill.body}\n\n## Untrusted data\n\n${untrustedDataRule}`;
}

function skillInvalid(file: string, why: string): A3rError {
  return new A3rError("CONFIG_INVALID", `${file}: ${why}`, {
    where: file,
    hint: "a SKILL.md starts with ---, name: ..., description: ..., --- and then the procedure",
  });
}
