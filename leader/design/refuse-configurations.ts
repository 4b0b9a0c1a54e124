import type { RefusedConfiguration, StagePlan } from "../domain/planner.ts";
import type { Topic } from "../domain/topic.ts";
import { checkOverrides, type engineSchemaFor } from "./engine-schema.ts";

/**
 * Per-configuration refusal: a configuration whose settings, merged into the base config
 * with the base's fixed overrides and its seed, fail the engine's config schema (say
 * `clip: 5` where the engine takes at most 1) is dropped from the stage with its reason,
 * before any blueprint is written, so the rest of the campaign still runs and the plan and
 * the report say what was left out and why. Pure; the same plan always gives the same
 * answer, so a re-run plan node drops the same configurations.
 */
export interface RefusalResult {
  plan: StagePlan;
  refused: RefusedConfiguration[];
}

export function refuseOutOfRange(plan: StagePlan, topic: Topic, engine: NonNullable<Awaited<ReturnType<typeof engineSchemaFor>>> | undefined): RefusalResult {
  if (!engine || !topic.base) return { plan, refused: [] };
  const base = topic.base;
  const refused: RefusedConfiguration[] = [];
  for (const configuration of plan.configurations) {
    const seed = plan.experiments.find((experiment) => experiment.configurationId === configuration.id)?.seed ?? 1;
    const reasons = checkOverrides(engine, { ...base.overrides, ...configuration.settings, [base.seed_key]: seed });
    if (reasons.length > 0) refused.push({ configurationId: configuration.id, settings: configuration.settings, reasons });
  }
  if (refused.length === 0) return { plan, refused };
  const dropped = new Set(refused.map((item) => item.configurationId));
  const sentence = `refused before running, outside what the engine accepts: ${refused.map((item) => `${item.configurationId} (${item.reasons.join("; ")})`).join("; ")}`;
  return {
    plan: {
      ...plan,
      rationale: `${plan.rationale.replace(/[.\s]+$/, "")}; ${sentence}`,
      configurations: plan.configurations.filter((configuration) => !dropped.has(configuration.id)),
      experiments: plan.experiments.filter((experiment) => !dropped.has(experiment.configurationId)),
      refused: [...(plan.refused ?? []), ...refused],
    },
    refused,
  };
}
