import { analyzeBlueprint } from "../../blueprints/index.ts";
import type { BlueprintText } from "../domain/planner.ts";
import { checkOverrides, type engineSchemaFor } from "./engine-schema.ts";

/**
 * The audit's check of each blueprint's overrides against the engine's config schema: one
 * finding per problem, on the blueprint's `overrides` line, so a value the engine would
 * refuse stops the stage before any worker spends its retries on it.
 */
export function engineFindings(
  engine: NonNullable<Awaited<ReturnType<typeof engineSchemaFor>>>,
  texts: readonly BlueprintText[],
): { blueprintId: string; line: number; message: string }[] {
  return texts.flatMap(({ blueprintId, text }) => {
    const { blueprint } = analyzeBlueprint(text);
    const overrides = blueprint?.frontMatter.overrides;
    if (!blueprint || typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) return [];
    const line = blueprint.lines.overrides ?? 1;
    return checkOverrides(engine, overrides as Record<string, unknown>).map((message) => ({ blueprintId, line, message }));
  });
}
