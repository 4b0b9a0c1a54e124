import type { Overrides } from "../../blueprints/index.ts";

/**
 * How many steps a run is planned to make, when the blueprint says: front matter
 * `expected_steps`, else a `max_steps` among the overrides in force (`max_steps`,
 * `trainer.max_steps`), else one in the configuration's values. A run that exits 0 before
 * it is not a success: it stopped early (`failed: stopped at step 3 of 20`), and its
 * prediction is not judged on the partial curve. Pure: the caller reads the config.
 *
 * Left out: other names for the same thing (`total_training_steps`, epochs): a blueprint
 * whose trainer counts that way states `expected_steps`.
 */
export interface PlannedSteps {
  steps: number;
  /** Where the number came from, for the reason and attempts.md (`expected_steps`, `overrides max_steps`, `config trainer.max_steps`). */
  source: string;
}

const isPlanned = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value) && value > 0;
const asNumber = (value: unknown): unknown => (typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value);

function maxStepsIn(values: Overrides): { key: string; steps: number } | undefined {
  const keys = Object.keys(values).filter((key) => key === "max_steps" || key.endsWith(".max_steps"));
  // The shortest path first: `max_steps` before `trainer.max_steps`.
  keys.sort((left, right) => left.length - right.length);
  for (const key of keys) {
    const value = asNumber(values[key]);
    if (isPlanned(value)) return { key, steps: value };
  }
  return undefined;
}

export function plannedStepsOf(frontMatter: Record<string, unknown>, overrides: Overrides, configValues: Overrides): PlannedSteps | undefined {
  if (isPlanned(frontMatter.expected_steps)) return { steps: frontMatter.expected_steps, source: "expected_steps" };
  const fromOverrides = maxStepsIn(overrides);
  if (fromOverrides) return { steps: fromOverrides.steps, source: `overrides ${fromOverrides.key}` };
  const fromConfig = maxStepsIn(configValues);
  if (fromConfig) return { steps: fromConfig.steps, source: `config ${fromConfig.key}` };
  return undefined;
}

/** The reason a run that ended before its plan is recorded with, or undefined when it reached it. */
export function stoppedShortReason(planned: PlannedSteps | undefined, lastStep: number | null): string | undefined {
  if (!planned) return undefined;
  if (lastStep !== null && lastStep >= planned.steps) return undefined;
  return `stopped at step ${lastStep ?? 0} of ${planned.steps}`;
}
