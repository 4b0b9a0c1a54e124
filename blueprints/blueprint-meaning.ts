import { isDeepStrictEqual } from "node:util";
import type { Blueprint } from "./blueprint.ts";

/**
 * What a blueprint means, without how it was written: the values and the front matter,
 * but not its format, file or line numbers. The a3r, id and mode front-matter keys are
 * left out because render writes them for every blueprint (they repeat `id` and `mode`).
 */
export function blueprintMeaning(blueprint: Blueprint): Record<string, unknown> {
  const { a3r: _version, id: _id, mode: _mode, ...extra } = blueprint.frontMatter;
  return {
    id: blueprint.id,
    mode: blueprint.mode,
    purpose: blueprint.purpose,
    codebase: blueprint.codebase,
    venv: blueprint.venv,
    config: blueprint.config,
    command: blueprint.command,
    resultDir: blueprint.resultDir,
    timeBudgetMs: blueprint.timeBudgetMs,
    timeBudget: blueprint.timeBudget,
    notes: blueprint.notes,
    frontMatter: JSON.parse(JSON.stringify(extra)) as unknown,
  };
}

/** True when two blueprints mean the same experiment (see `blueprintMeaning`). */
export function sameBlueprintMeaning(a: Blueprint, b: Blueprint): boolean {
  return isDeepStrictEqual(blueprintMeaning(a), blueprintMeaning(b));
}
