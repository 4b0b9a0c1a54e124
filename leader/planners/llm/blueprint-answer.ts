import { isDeepStrictEqual } from "node:util";
import { analyzeBlueprint } from "../../../blueprints/index.ts";
import type { BlueprintsAnswer } from "./answers.ts";
import type { BlueprintText } from "../../domain/planner.ts";

/**
 * Checks the blueprints a model wrote against the drafts the graph rendered, before the
 * graph audits them. The model may change how an experiment is run (command, setup,
 * notes, paths it knows better); it may not change which experiment it is: the id, the
 * stage, the seed, the configuration and its overrides, the metric, the prediction, the
 * campaign's command rules and the result directory stay the drafts'. Structural problems (sections, paths, command
 * policy) are the audit's, not repeated here. Pure.
 *
 * A draft the answer leaves out is kept as it is; the answer comes back in draft order.
 */
export const fixedFrontMatterFields = [
  "id",
  "campaign",
  "stage",
  "seed",
  "configuration",
  "overrides",
  "metric",
  "prediction",
  "hypothesis",
  "command_rules",
  "command_allow",
] as const;

export type BlueprintAnswerCheck = { ok: true; blueprints: BlueprintText[] } | { ok: false; problems: string[] };

export function checkBlueprintAnswer(answer: BlueprintsAnswer, drafts: BlueprintText[]): BlueprintAnswerCheck {
  const problems: string[] = [];
  const byId = new Map<string, string>();
  const known = drafts.map((draft) => draft.blueprintId);
  for (const item of answer.blueprints) {
    if (!known.includes(item.blueprintId)) {
      problems.push(`blueprint "${item.blueprintId}" is not one of the drafts (${known.join(", ")}); do not add or rename experiments`);
      continue;
    }
    if (byId.has(item.blueprintId)) {
      problems.push(`blueprint "${item.blueprintId}" is given twice`);
      continue;
    }
    byId.set(item.blueprintId, item.markdown);
  }
  for (const draft of drafts) {
    const text = byId.get(draft.blueprintId);
    if (text === undefined) continue;
    problems.push(...changedIdentity(draft, text));
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, blueprints: drafts.map((draft) => ({ blueprintId: draft.blueprintId, text: ensureNewline(byId.get(draft.blueprintId) ?? draft.text) })) };
}

function changedIdentity(draft: BlueprintText, text: string): string[] {
  if (text.trim() === "") return [`blueprint "${draft.blueprintId}" is empty: give the whole file, or leave it out to keep the draft`];
  const before = analyzeBlueprint(draft.text).blueprint;
  const after = analyzeBlueprint(text).blueprint;
  if (!before) return [];
  if (!after) return [`blueprint "${draft.blueprintId}" cannot be read as a blueprint (too large or not text)`];
  const problems: string[] = [];
  for (const field of fixedFrontMatterFields) {
    if (!isDeepStrictEqual(normalize(before.frontMatter[field]), normalize(after.frontMatter[field]))) {
      problems.push(
        `blueprint "${draft.blueprintId}" changes front-matter field \`${field}\` (draft: ${JSON.stringify(before.frontMatter[field])}, yours: ${JSON.stringify(after.frontMatter[field])}); keep it as in the draft`,
      );
    }
  }
  if (before.resultDir !== after.resultDir) {
    problems.push(
      `blueprint "${draft.blueprintId}" changes the result directory (draft: ${before.resultDir}, yours: ${after.resultDir || "(none)"}); keep it as in the draft`,
    );
  }
  return problems;
}

/** YAML may write 3.0e-6 or 0.000003: compare values, not spellings. */
function normalize(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

function ensureNewline(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}
